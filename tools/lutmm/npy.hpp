#pragma once
// A strict reader for 2-D NumPy .npy arrays of float32 or float16 (what `lutmm quantize --input` takes).
#include <cstdint>
#include <string>
#include <vector>

namespace lutmm::cli {

struct NpyMatrix {
  int64_t rows = 0, cols = 0;
  std::string descr;        // "<f4" or "<f2", as stored
  std::vector<float> data;  // [rows][cols], row-major whatever the file's order
};

// Reads format versions 1.0, 2.0 and 3.0. Rejects anything else: other dtypes, big-endian data, not
// exactly two dimensions, trailing or missing bytes, non-finite values. Throws lutmm::Error naming 'input'.
NpyMatrix read_npy_matrix(const std::string& path);

}  // namespace lutmm::cli
