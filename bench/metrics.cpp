#include "metrics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/core.h>

#include "lutmm/error.hpp"

namespace lutmm::bench {

int choose_group(int64_t k, int requested) {
  if (k < 1) throw_argument_error("k", "at least 1", std::to_string(k));
  const bool listed = requested == 32 || requested == 64 || requested == 128 || requested == 256;
  if (requested != 0 && !listed) {
    throw_argument_error("group", "one of 32, 64, 128, 256, or 0 for one scale per row", std::to_string(requested));
  }
  if (requested != 0 && k % requested == 0) return requested;
  if (requested != 0 && k % 64 == 0) return 64;
  if (k > INT32_MAX) throw_argument_error("k", "at most 2^31-1 for one scale per row", std::to_string(k));
  return static_cast<int>(k);
}

Traffic traffic(int64_t m, int64_t n, int64_t k, int bits, int group) {
  if (m < 1 || n < 1 || k < 1) {
    throw_argument_error("shape", "M, N, K >= 1",
                         std::to_string(m) + " " + std::to_string(n) + " " + std::to_string(k));
  }
  if (bits < 2 || bits > 4) throw_argument_error("bits", "2, 3 or 4", std::to_string(bits));
  if (group < 1 || k % group != 0) {
    throw_argument_error("group", "a divisor of K (=" + std::to_string(k) + ")", std::to_string(group));
  }
  Traffic t;
  t.weight = (n * k * bits + 7) / 8;
  t.scales = n * (k / group) * 2;
  t.x = m * k * 2;
  t.out = m * n * 2;
  return t;
}

double gemm_flops(int64_t m, int64_t n, int64_t k) {
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
}

double floor_us(double bytes, double flops, double read_bytes_per_s, double dense_flops_per_s) {
  if (!(read_bytes_per_s > 0)) throw_argument_error("read_bytes_per_s", "> 0", std::to_string(read_bytes_per_s));
  if (!(dense_flops_per_s > 0)) throw_argument_error("dense_flops_per_s", "> 0", std::to_string(dense_flops_per_s));
  return std::max(bytes / read_bytes_per_s, flops / dense_flops_per_s) * 1e6;
}

CopyCount rotation_copies(int64_t bytes_per_copy, int64_t l2_bytes) {
  if (bytes_per_copy < 1) throw_argument_error("bytes_per_copy", ">= 1", std::to_string(bytes_per_copy));
  if (l2_bytes < 0) throw_argument_error("l2_bytes", ">= 0", std::to_string(l2_bytes));
  // Smallest c with c * bytes > 4 * l2.
  const int64_t needed = 4 * l2_bytes / bytes_per_copy + 1;
  CopyCount c;
  c.copies = static_cast<int>(std::clamp<int64_t>(needed, 2, kMaxCopies));
  c.capped = needed > kMaxCopies;
  return c;
}

int calls_per_graph(int copies, double estimated_call_us, double target_us) {
  if (copies < 1) throw_argument_error("copies", ">= 1", std::to_string(copies));
  if (!(estimated_call_us > 0)) {
    throw_argument_error("estimated_call_us", "> 0", std::to_string(estimated_call_us));
  }
  // Bounded so one graph stays a few thousand nodes even for a call of a microsecond.
  constexpr double kMaxCalls = 4096;
  const int wanted = static_cast<int>(std::min(std::ceil(target_us / estimated_call_us), kMaxCalls));
  // A whole number of rotations: the next replay starts again at copy 0, which is then the copy used
  // longest ago. With a partial last round it would be one read only (calls mod copies) calls ago.
  const int rounds = std::max(1, (wanted + copies - 1) / copies);
  return rounds * copies;
}

double median(std::vector<double> values) {
  if (values.empty()) throw_argument_error("values", "at least one value", "an empty list");
  std::sort(values.begin(), values.end());
  const size_t h = values.size() / 2;
  return values.size() % 2 == 1 ? values[h] : 0.5 * (values[h - 1] + values[h]);
}

double geometric_mean(const std::vector<double>& values) {
  if (values.empty()) throw_argument_error("values", "at least one value", "an empty list");
  double log_sum = 0;
  for (double v : values) {
    if (!(v > 0) || !std::isfinite(v)) throw_argument_error("values", "positive finite values", std::to_string(v));
    log_sum += std::log(v);
  }
  return std::exp(log_sum / static_cast<double>(values.size()));
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + '"';
}

std::string bench_csv_header() {
  return "device,m,n,k,label,bits,group,dtype,config,status,lutmm_us,cublas_us,speedup,tbps,tflops,floor_us,"
         "pct_floor,bytes,flops,host_us,compile_ms,rel_err_vs_cublas,lutmm_copies,dense_copies,lutmm_calls,"
         "dense_calls,l2_cold,hbm_read_tbps,dense_bf16_tflops,read_us,pct_read,launch";
}

void write_bench_csv(const std::string& path, const std::vector<BenchRow>& rows, const Ceilings& ceilings,
                     const std::string& device_name) {
  if (path.empty()) throw_argument_error("csv_path", "a file path", "an empty string");
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    if (!f) throw_error("cannot write the benchmark CSV '" + tmp + "' (the folder must exist and be writable)");
    f << bench_csv_header() << '\n';
    // Times to 0.01 us, ratios and rates to 4 significant digits: below the run-to-run noise.
    for (const BenchRow& r : rows) {
      std::string line = fmt::format("{},{},{},{},{},{},{},{},{},{},", csv_field(device_name), r.shape.m, r.shape.n,
                                     r.shape.k, csv_field(r.shape.label), r.bits, r.group, to_string(r.dtype),
                                     csv_field(r.config), csv_field(r.status));
      if (r.timed()) {
        line += fmt::format("{:.2f},{:.2f},{:.4g},{:.4g},{:.4g},{:.3f},{:.4g},", r.lutmm_us, r.cublas_us, r.speedup(),
                            r.tbps(), r.tflops(), r.floor_us, r.pct_floor());
      } else {
        line += ",,,,,,,";
      }
      line += fmt::format("{},{:.6g},", r.bytes, r.flops);
      if (r.timed()) {
        line += fmt::format("{:.2f},{:.1f},{:.3e},{},{},{},{},{},", r.host_us, r.compile_ms, r.rel_err_vs_cublas,
                            r.lutmm_copies, r.dense_copies, r.lutmm_calls, r.dense_calls, r.l2_cold ? 1 : 0);
      } else {
        line += ",,,,,,,,";
      }
      line += fmt::format("{:.4g},{:.4g},", ceilings.read_bytes_per_s / 1e12, ceilings.dense_flops_per_s / 1e12);
      line += r.timed() && r.read_us > 0 ? fmt::format("{:.2f},{:.4g}", r.read_us, r.pct_read()) : std::string(",");
      line += "," + csv_field(r.launch);
      f << line << '\n';
    }
    f.flush();
    if (!f) throw_error("writing the benchmark CSV '" + tmp + "' failed");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw_error("cannot move the benchmark CSV into place at '" + path + "': " + ec.message());
  }
}

}  // namespace lutmm::bench
