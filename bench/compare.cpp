#include "compare.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <istream>
#include <tuple>

#include <fmt/format.h>

#include "lutmm/error.hpp"

namespace lutmm::bench {

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        fields.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else if (c != '\r') {
      fields.back() += c;
    }
  }
  return fields;
}

namespace {

// A CSV read into its header and rows, with errors that name the input and the line.
struct Table {
  std::string name;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<int> line_numbers;

  int column(const std::string& wanted) const {
    const auto it = std::find(header.begin(), header.end(), wanted);
    if (it == header.end()) throw_error(fmt::format("{}: no column '{}' in its header line", name, wanted));
    return static_cast<int>(it - header.begin());
  }
  int64_t integer(size_t row, int col) const {
    const std::string& f = rows[row][static_cast<size_t>(col)];
    int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
    if (ec != std::errc() || ptr != f.data() + f.size() || v < 1)
      throw_error(fmt::format("{}:{}: column '{}' should be a positive integer, got '{}'", name, line_numbers[row],
                              header[static_cast<size_t>(col)], f));
    return v;
  }
  // 0 for an empty cell (not measured)
  double number(size_t row, int col) const {
    const std::string& f = rows[row][static_cast<size_t>(col)];
    if (f.empty()) return 0.0;
    try {
      size_t used = 0;
      const double v = std::stod(f, &used);
      if (used == f.size() && v >= 0) return v;
    } catch (const std::exception&) {
    }
    throw_error(fmt::format("{}:{}: column '{}' should be a non-negative number or empty, got '{}'", name,
                            line_numbers[row], header[static_cast<size_t>(col)], f));
  }
};

Table read_table(std::istream& in, const std::string& name) {
  Table t;
  t.name = name;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line == "\r") continue;
    std::vector<std::string> fields = split_csv_line(line);
    if (t.header.empty()) {
      t.header = std::move(fields);
      continue;
    }
    if (fields.size() != t.header.size())
      throw_error(fmt::format("{}:{}: {} fields where the header has {}", name, number, fields.size(), t.header.size()));
    t.rows.push_back(std::move(fields));
    t.line_numbers.push_back(number);
  }
  if (t.header.empty()) throw_error(fmt::format("{}: empty, expected a CSV header line", name));
  return t;
}

std::ifstream open_input(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw_argument_error("path", "a readable CSV file", fmt::format("'{}'", path));
  return f;
}

auto key(const Shape& s) { return std::make_tuple(s.m, s.n, s.k); }

}  // namespace

std::vector<ResultRow> read_results(std::istream& in, const std::string& name) {
  const Table t = read_table(in, name);
  const int m = t.column("m"), n = t.column("n"), k = t.column("k"), label = t.column("label");
  const int config = t.column("config"), status = t.column("status"), lutmm_us = t.column("lutmm_us");
  const int cublas_us = t.column("cublas_us"), floor = t.column("floor_us");
  std::vector<ResultRow> out;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    ResultRow row;
    row.shape = Shape{t.integer(r, m), t.integer(r, n), t.integer(r, k), t.rows[r][static_cast<size_t>(label)]};
    row.config = t.rows[r][static_cast<size_t>(config)];
    row.status = t.rows[r][static_cast<size_t>(status)];
    row.lutmm_us = t.number(r, lutmm_us);
    row.cublas_us = t.number(r, cublas_us);
    row.floor_us = t.number(r, floor);
    out.push_back(std::move(row));
  }
  return out;
}

std::vector<ResultRow> read_results_file(const std::string& path) {
  std::ifstream f = open_input(path);
  return read_results(f, path);
}

std::vector<AnchorRow> read_anchors(std::istream& in, const std::string& name) {
  const Table t = read_table(in, name);
  const int m = t.column("M"), n = t.column("N"), k = t.column("K");
  std::vector<std::pair<int, std::string>> kernels;  // column, kernel name
  for (size_t c = 0; c < t.header.size(); ++c) {
    const std::string& h = t.header[c];
    if (h.size() < 3 || h.compare(h.size() - 3, 3, "_us") != 0) continue;
    const std::string kernel = h.substr(0, h.find('_'));
    if (kernel == "cublas" || kernel == "floor") continue;
    kernels.emplace_back(static_cast<int>(c), kernel);
  }
  if (kernels.empty()) throw_error(fmt::format("{}: no anchor columns (<kernel>_..._us) in its header line", name));
  std::vector<AnchorRow> out;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    AnchorRow row;
    row.shape = Shape{t.integer(r, m), t.integer(r, n), t.integer(r, k), {}};
    for (const auto& [col, kernel] : kernels) {
      const double us = t.number(r, col);
      if (us > 0) row.us[kernel] = us;
    }
    out.push_back(std::move(row));
  }
  return out;
}

std::vector<AnchorRow> read_anchors_file(const std::string& path) {
  std::ifstream f = open_input(path);
  return read_anchors(f, path);
}

int Standing::total_won() const {
  int n = 0;
  for (const auto& [kernel, t] : per_kernel) n += t.won;
  return n;
}
int Standing::total_lost() const {
  int n = 0;
  for (const auto& [kernel, t] : per_kernel) n += t.lost;
  return n;
}

Standing compare_results(const std::vector<ResultRow>& results, const std::vector<AnchorRow>& anchors,
                         int64_t small_m) {
  std::map<std::tuple<int64_t, int64_t, int64_t>, const ResultRow*> timed;
  for (const ResultRow& r : results)
    if (r.timed()) timed.emplace(key(r.shape), &r);  // the first timed row of a shape wins
  Standing s;
  for (const AnchorRow& a : anchors) {
    const auto it = timed.find(key(a.shape));
    if (it == timed.end()) {
      s.not_benchmarked.push_back(a.shape);
      continue;
    }
    const ResultRow& r = *it->second;
    for (const auto& [kernel, us] : a.us) {
      Standing::Tally& t = s.per_kernel[kernel];
      if (r.lutmm_us < us) {
        ++t.won;
      } else {
        ++t.lost;
        s.losses.push_back({a.shape, kernel, r.config, us, r.lutmm_us});
      }
    }
  }
  for (const auto& [k, r] : timed) {
    if (r->shape.m > small_m) continue;
    ++s.small_m_shapes;
    if (r->lutmm_us > r->cublas_us) s.slower.push_back({r->shape, r->config, r->lutmm_us, r->cublas_us});
  }
  return s;
}

}  // namespace lutmm::bench
