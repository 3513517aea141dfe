#pragma once
// Tensor-core wrappers of the sm80 family: mma.sync m16n8k16 with float accumulators, and the few
// packed 16-bit ops the dequantizer needs, for fp16 and bf16 alike (kBf16 picks the type).
#include "lutmm/common.cuh"

namespace lutmm::mma {

// d += a * b.  a: 4 regs (16x16, row), b: 2 regs (16x8, col), d: 4 floats (16x8).
template <bool kBf16>
LUTMM_DEVICE void mma_m16n8k16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  if constexpr (kBf16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
}

// Element-wise product of two packed pairs. bf16 multiply is an fma with -0 (sm_80 has no mul.bf16x2).
template <bool kBf16>
LUTMM_DEVICE uint32_t mul_x2(uint32_t a, uint32_t b) {
  uint32_t d;
  if constexpr (kBf16) {
    asm("fma.rn.bf16x2 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(0x80008000u));
  } else {
    asm("mul.rn.f16x2 %0, %1, %2;\n" : "=r"(d) : "r"(a), "r"(b));
  }
  return d;
}

// Two floats -> one packed pair (lo = first), round to nearest even.
template <bool kBf16>
LUTMM_DEVICE uint32_t pack_x2(float lo, float hi) {
  uint32_t d;
  if constexpr (kBf16) {
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(d) : "f"(hi), "f"(lo));
  } else {
    asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(d) : "f"(hi), "f"(lo));
  }
  return d;
}

template <bool kBf16>
LUTMM_DEVICE float to_float(uint16_t v) {
  if constexpr (kBf16) {
    return __uint_as_float(static_cast<uint32_t>(v) << 16);
  } else {
    float f;
    asm("{ .reg .f16 h; mov.b16 h, %1; cvt.f32.f16 %0, h; }\n" : "=f"(f) : "h"(v));
    return f;
  }
}

}  // namespace lutmm::mma
