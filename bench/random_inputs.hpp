#pragma once
// Random, never-zero inputs for the GPU checks and the benchmark, reproducible from one seed.
//
// Every array is drawn in independent per-row streams (seed, purpose, row) -> SplitMix64, so the values do
// not depend on how many threads generate them and a large weight is generated in parallel.
#include <cstdint>
#include <vector>

#include "lutmm/dtype.hpp"
#include "lutmm/format.hpp"

namespace lutmm::bench {

// SplitMix64 (Steele, Lea, Flood 2014): 64-bit state, passes BigCrush, trivially seekable.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  // A stream for (seed, purpose, index): different purposes/rows give unrelated sequences.
  Rng(uint64_t seed, uint64_t purpose, uint64_t index);
  uint64_t next_u64();
  double uniform();  // [0, 1), 53 random bits
  double normal();   // N(0, 1), Marsaglia polar method

 private:
  uint64_t state_;
};

enum class TableKind : uint8_t {
  random,  // 2^bits sorted N(0,1) samples, distinct after rounding to the dtype
  nf,      // the built-in NF table of that bit width
};

// A weight with uniformly random codes, a table of `table` kind, and scales ~ N(0, scale_sigma) of both
// signs, never zero after rounding to the dtype. Checks its arguments like QuantizedWeight::validate().
QuantizedWeight random_quantized_weight(int64_t n, int64_t k, int bits, int group_size, DType dtype, uint64_t seed,
                                        TableKind table = TableKind::random, double scale_sigma = 0.05);

// `count` values ~ N(0, sigma) rounded to the dtype, redrawn when they round to zero.
std::vector<uint16_t> random_values(int64_t count, DType dtype, uint64_t seed, double sigma = 1.0);

// W[n][k] = table[code] * scale exactly, as double (the reference's definition), multi-threaded.
std::vector<double> dequantize_f64(const QuantizedWeight& w);
// The same rounded once to the dtype: the dense matrix cuBLAS multiplies in the benchmark.
std::vector<uint16_t> dequantize_to_dtype(const QuantizedWeight& w);

}  // namespace lutmm::bench
