#pragma once
// The lutmm quantization format (docs/FORMAT.md):
//   W[n,k] = table[codes[n,k]] * scales[n, k / group_size]
// codes are b-bit (b in {2,3,4}); table holds 2^b values; scales have one entry per row and group of
// group_size consecutive k (group_size in {32,64,128,256} or group_size == K: one scale per row).
// Table and scales are held in the activation dtype (fp16 or bf16).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lutmm/dtype.hpp"

namespace lutmm {

// A lookup table of 2^bits finite values, kept in float (exactly representable in the target dtype
// after to_dtype()).
struct Table {
  std::string name;           // "nf4", "int4", "uint4", "fp4_e2m1", "custom", "learned", ...
  int bits = 4;
  std::vector<float> values;  // size 2^bits, ascending for the built-in tables
};

// Built-in tables.
Table nf_table(int bits);                   // NF4 (QLoRA levels), NF3, NF2 (same construction)
Table int_table(int bits, bool symmetric);  // symmetric: -(2^(b-1)-1) .. 2^(b-1)-1 padded; asymmetric: -2^(b-1) .. 2^(b-1)-1
Table fp4_e2m1_table();                     // the 16 e2m1 values
Table custom_table(std::vector<float> values, std::string name = "custom");  // validates size and finiteness
// "nf" / "int" / "int_asym" / "fp4" / "nf4" / "int3" ... (bits taken from the name when it carries them).
Table table_by_name(std::string_view name, int bits);
std::vector<std::string> builtin_table_names();

// Checks a (bits, group_size, K) combination; throws Error naming the bad argument.
void check_bits(int bits);
void check_group_size(int group_size, int64_t k);
inline int64_t groups_per_row(int64_t k, int group_size) { return k / group_size; }

// A quantized weight on the host, codes unpacked (one code per byte), the layout every CPU tool uses.
struct QuantizedWeight {
  int64_t n = 0;               // output features (rows of W)
  int64_t k = 0;               // input features
  int bits = 4;
  int group_size = 128;        // == k for one scale per row
  DType dtype = DType::bf16;
  std::string table_name;
  std::vector<uint8_t> codes;   // [n][k], each < 2^bits
  std::vector<uint16_t> table;  // [2^bits], dtype bits
  std::vector<uint16_t> scales; // [n][k / group_size], dtype bits

  int64_t groups() const { return k / group_size; }
  float table_value(int code) const { return bits_to_float(table[code], dtype); }
  float scale(int64_t row, int64_t col) const {
    return bits_to_float(scales[row * groups() + col / group_size], dtype);
  }
  // The exact dequantized value table[c] * scale as a double (the reference's definition).
  double dequant(int64_t row, int64_t col) const {
    return static_cast<double>(table_value(codes[row * k + col])) * static_cast<double>(scale(row, col));
  }
  // Throws Error naming the first inconsistent field (sizes, code range, finiteness of table/scales).
  void validate() const;
};

}  // namespace lutmm
