#pragma once
// Thin wrappers over single memory instructions (sm_80+): asynchronous global->shared copies, ldmatrix,
// L2 cache policies.
#include "lutmm/common.cuh"

namespace lutmm::ptx {

LUTMM_DEVICE uint32_t smem_addr(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

// An L2 policy that marks lines evict-first: weights streamed once should not push x and the
// partial sums out of L2.
LUTMM_DEVICE uint64_t l2_evict_first_policy() {
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}

// 16-byte async copy, bypassing L1. src_bytes = 0 zero-fills the destination (out-of-range rows/columns).
LUTMM_DEVICE void cp_async_16(void* smem, const void* gmem, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(smem)), "l"(gmem),
               "r"(valid ? 16 : 0));
}

LUTMM_DEVICE void cp_async_16_hint(void* smem, const void* gmem, uint64_t policy) {
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;\n" ::"r"(smem_addr(smem)),
               "l"(gmem), "l"(policy));
}

LUTMM_DEVICE void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int kPending>
LUTMM_DEVICE void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

// Four 8x8 b16 matrices; lane i supplies the row address of matrix i / 8, row i % 8.
LUTMM_DEVICE void ldmatrix_x4(uint32_t (&r)[4], const void* smem_row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(smem_row)));
}

LUTMM_DEVICE void ldmatrix_x2(uint32_t (&r)[2], const void* smem_row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(smem_addr(smem_row)));
}

LUTMM_DEVICE uint32_t prmt(uint32_t a, uint32_t b, uint32_t selector) {
  uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(selector));
  return d;
}

}  // namespace lutmm::ptx
