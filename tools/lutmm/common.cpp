// Option parsers, what-if devices and the environment report shared by the subcommands.
#include <algorithm>
#include <charconv>
#include <filesystem>
#include <system_error>

#include <fmt/core.h>

#include "cli.hpp"
#include "jit/jit.hpp"

namespace lutmm::cli {

Shape parse_shape_arg(std::string_view text, std::string_view option) {
  const auto bad = [&](std::string_view why) -> UsageError {
    return UsageError(fmt::format("{} '{}': expected M,N,K with three positive integers ({})", option, text, why));
  };
  int64_t dims[3] = {0, 0, 0};
  int count = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    if (count == 3) throw bad("more than three numbers");
    size_t end = text.find_first_of(",x ", pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view part = text.substr(pos, end - pos);
    int64_t value = 0;
    const auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
    if (part.empty() || ec != std::errc() || ptr != part.data() + part.size()) {
      throw bad(fmt::format("'{}' is not an integer", part));
    }
    if (value <= 0) throw bad(fmt::format("{} is not positive", value));
    dims[count++] = value;
    pos = end + 1;
    if (end == text.size() - 1) throw bad("it ends in a separator");
  }
  if (count != 3) throw bad(fmt::format("got {} number{}", count, count == 1 ? "" : "s"));
  return Shape{dims[0], dims[1], dims[2], ""};
}

CLI::Validator shape_validator() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        try {
          parse_shape_arg(text, "shape");
          return {};
        } catch (const UsageError& e) {
          return e.what();
        }
      },
      "M,N,K", "shape");
}

CLI::Option* add_group_option(CLI::App* app, int& group) {
  return app
      ->add_option("--group", group,
                   "Weights per scale along K (0: one per row); for a K it does not divide: 64, else K")
      ->check(CLI::IsMember({0, 32, 64, 128, 256}))
      ->capture_default_str();
}

CLI::Validator dtype_validator() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        try {
          parse_dtype(text);
          return {};
        } catch (const Error& e) {
          return e.what();
        }
      },
      "bf16|fp16", "dtype");
}

namespace {

struct WhatIf {
  int arch;
  const char* model;
  int sm_count;
  int64_t l2_bytes;
  int64_t memory_bytes;
  int smem_per_block_optin;
  int smem_per_sm;
  int max_threads_per_sm;
};

constexpr int64_t kMiB = 1 << 20;
constexpr int64_t kGiB = int64_t{1} << 30;

// Published figures of one representative GPU per compute capability, as cudaGetDeviceProperties
// reports them (L2 is the enabled size, shared memory the opt-in limit per block and the size per SM).
constexpr WhatIf kWhatIf[] = {
    {80, "A100-SXM4-80GB", 108, 40 * kMiB, 80 * kGiB, 166912, 167936, 2048},
    {86, "GeForce RTX 3090", 82, 6 * kMiB, 24 * kGiB, 101376, 102400, 1536},
    {89, "L40S", 142, 96 * kMiB, 48 * kGiB, 101376, 102400, 1536},
    {90, "H200", 132, 60 * kMiB, 143155 * kMiB, 232448, 233472, 2048},  // as an H200 reports itself
    {100, "B200", 148, 126 * kMiB, 180 * kGiB, 232448, 233472, 2048},
    {120, "GeForce RTX 5090", 170, 96 * kMiB, 32 * kGiB, 101376, 102400, 1536},
};

}  // namespace

std::vector<int> what_if_archs() {
  std::vector<int> archs;
  for (const WhatIf& w : kWhatIf) archs.push_back(w.arch);
  return archs;
}

DeviceInfo what_if_device(int arch) {
  for (const WhatIf& w : kWhatIf) {
    if (w.arch != arch) continue;
    DeviceInfo dev;
    dev.index = -1;  // not a real device
    dev.name = fmt::format("what-if sm_{} ({}-like)", arch, w.model);
    dev.cc_major = arch / 10;
    dev.cc_minor = arch % 10;
    dev.sm_count = w.sm_count;
    dev.l2_bytes = w.l2_bytes;
    dev.memory_bytes = w.memory_bytes;
    dev.smem_per_block_optin = w.smem_per_block_optin;
    dev.smem_per_sm = w.smem_per_sm;
    dev.max_threads_per_sm = w.max_threads_per_sm;
    dev.regs_per_sm = 65536;
    return dev;
  }
  throw UsageError(fmt::format("--arch {}: expected one of {}", arch, join_ints(what_if_archs())));
}

CLI::Validator arch_validator() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        int arch = 0;
        const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), arch);
        const std::vector<int> archs = what_if_archs();
        if (ec == std::errc() && ptr == text.data() + text.size() &&
            std::find(archs.begin(), archs.end(), arch) != archs.end()) {
          return {};
        }
        return fmt::format("expected one of {}, got '{}'", join_ints(archs), text);
      },
      "ARCH", "arch");
}

DeviceInfo planning_device(int arch) {
  if (arch != 0) return what_if_device(arch);
  if (device_count() == 0) {
    throw UsageError(fmt::format("no CUDA device on this machine: pass --arch (one of {}) to plan for a what-if GPU",
                                 join_ints(what_if_archs())));
  }
  return current_device_info();
}

std::string format_bytes(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  return unit == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", value, units[unit]);
}

std::string join_ints(const std::vector<int>& values, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out += separator;
    out += std::to_string(values[i]);
  }
  return out;
}

namespace {

struct CacheStats {
  int64_t cubins = 0;
  int64_t bytes = 0;
};

// Counts the cubins under the cache folder; unreadable entries are skipped (the cache is advisory).
CacheStats scan_cache(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  CacheStats stats;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return stats;
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec) && it->path().extension() == ".cubin") {
      ++stats.cubins;
      stats.bytes += static_cast<int64_t>(it->file_size(ec));
    }
  }
  return stats;
}

}  // namespace

void print_environment() {
  fmt::print("lutmm {}\n", version());
  fmt::print("CUDA runtime {}, driver {}\n", cuda_runtime_version(), cuda_driver_version());
  fmt::print("NVRTC {}, targets sm_{}\n", jit::nvrtc_version(), join_ints(jit::nvrtc_supported_archs(), ", sm_"));
  const int count = device_count();
  if (count == 0) {
    fmt::print("GPUs: no CUDA device (GPU work is unavailable; the CPU reference and NVRTC precompilation "
               "with --arch still work)\n");
  }
  for (int i = 0; i < count; ++i) {
    try {
      const DeviceInfo& d = device_info(i);
      // (the peak rates as the driver reports them: the pre-wait variant follows their ratio, runtime/gemm.cpp)
      const std::string peaks =
          d.memory_bytes_per_sm_clock() > 0
              ? fmt::format(", peak {:.2f} TB/s at {:.2f} GHz ({:.1f} bytes per SM a clock)",
                            d.memory_bytes_per_second / 1e12, d.sm_clock_khz / 1e6, d.memory_bytes_per_sm_clock())
              : std::string();
      fmt::print("GPU {}: {}, compute capability {}.{}, {} SMs, L2 {}, memory {}{}, shared memory per block {}{}\n",
                 i, d.name, d.cc_major, d.cc_minor, d.sm_count, format_bytes(d.l2_bytes),
                 format_bytes(d.memory_bytes), peaks, format_bytes(d.smem_per_block_optin),
                 d.shared_via_mps ? ", shared through MPS" : "");
    } catch (const Error& e) {
      fmt::print("GPU {}: unavailable ({})\n", i, e.what());
    }
  }
  std::string dir;
  try {
    dir = jit::cache_directory();
  } catch (const Error& e) {
    fmt::print("kernel cache: unavailable ({}); kernels are cached in memory only\n", e.what());
    return;
  }
  const CacheStats stats = scan_cache(dir);
  fmt::print("kernel cache: {} ({} cubin{}, {})\n", dir, stats.cubins, stats.cubins == 1 ? "" : "s",
             format_bytes(stats.bytes));
}

}  // namespace lutmm::cli
