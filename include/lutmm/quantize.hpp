#pragma once
// CPU quantizer: dense fp32 W[n,k] -> QuantizedWeight.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lutmm/format.hpp"

namespace lutmm {

enum class ScaleSearch : uint8_t {
  absmax,  // scale = max|w| of the group / max|table|
  mse,     // search the scale per group (a grid around absmax) minimising squared error
};

struct QuantizeOptions {
  int bits = 4;
  int group_size = 128;           // 0 means one group per row (group_size = k)
  DType dtype = DType::bf16;
  std::string table = "nf";       // a table_by_name() name; ignored when custom_table is set
  std::optional<std::vector<float>> custom_table;
  ScaleSearch scale_search = ScaleSearch::absmax;
  bool learn_table = false;       // learn the 2^bits values for the whole tensor (weighted Lloyd / k-means)
  int learn_iterations = 20;
  int threads = 0;                // 0: hardware concurrency
};

struct QuantizationError {
  double relative_frobenius = 0;  // ||W - Q||_F / ||W||_F
  double max_abs = 0;
  double rmse = 0;
  double sqnr_db = 0;             // 10 log10(||W||^2 / ||W - Q||^2)
};

QuantizedWeight quantize(const float* w, int64_t n, int64_t k, const QuantizeOptions& options);
QuantizationError reconstruction_error(const float* w, const QuantizedWeight& q);

}  // namespace lutmm
