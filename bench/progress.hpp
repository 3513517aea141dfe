#pragma once
// A one-line progress bar on stderr for long benchmark runs:
//   [##########..........]  28/56  M=1024 N=4608 K=1152
// On a terminal the line is redrawn in place; otherwise (a log file) each step is its own line.
#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>

#include <unistd.h>

namespace lutmm::bench {

class Progress {
 public:
  Progress(int total, bool enabled, std::FILE* out = stderr)
      : total_(total), enabled_(enabled && total > 0), out_(out), tty_(isatty(fileno(out)) == 1) {}
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress() { finish(); }

  // Marks one more item done, labelled with what comes next (or what was just done).
  void step(std::string_view label) {
    if (done_ < total_) ++done_;
    if (!enabled_) return;
    const std::string line = render(done_, total_, label, kBarWidth);
    if (tty_) {
      // Pad to the previous length so a shorter line leaves no stale characters.
      std::fprintf(out_, "\r%-*s", static_cast<int>(std::max(width_, line.size())), line.c_str());
      width_ = line.size();
    } else {
      std::fprintf(out_, "%s\n", line.c_str());
    }
    std::fflush(out_);
  }

  // Ends the redrawn line (once); nothing to do for a log.
  void finish() {
    if (enabled_ && tty_ && width_ > 0) {
      std::fprintf(out_, "\n");
      std::fflush(out_);
    }
    width_ = 0;
  }

  static std::string render(int done, int total, std::string_view label, int bar_width) {
    const int filled = total > 0 ? static_cast<int>(static_cast<long long>(bar_width) * done / total) : 0;
    std::string line = "[";
    line.append(static_cast<size_t>(filled), '#');
    line.append(static_cast<size_t>(bar_width - filled), '.');
    line += "] ";
    const std::string count = std::to_string(done) + "/" + std::to_string(total);
    const int digits = static_cast<int>(std::to_string(total).size());
    line.append(static_cast<size_t>(std::max(0, 2 * digits + 1 - static_cast<int>(count.size()))), ' ');
    line += count;
    if (!label.empty()) line.append("  ").append(label);
    return line;
  }

 private:
  static constexpr int kBarWidth = 30;
  int total_;
  int done_ = 0;
  bool enabled_;
  std::FILE* out_;
  bool tty_;
  size_t width_ = 0;
};

}  // namespace lutmm::bench
