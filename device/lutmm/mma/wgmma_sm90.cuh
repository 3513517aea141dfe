#pragma once
// Warpgroup MMA (sm_90a): the four warps of a warpgroup multiply a 64 x 16 A tile from their registers by a
// 16 x N B tile that the tensor cores read from shared memory themselves, into 64 x N float accumulators.
//
// A from registers: warp w of the warpgroup supplies rows 16w .. 16w + 15 in exactly the mma.sync
// m16n8k16 A-fragment layout (lane g = lane / 4, c = lane % 4 holds rows g and g + 8, columns 2c, 2c + 1
// and 2c + 8, 2c + 9), so the LUT dequantizer's fragments feed it unchanged. The accumulators come back
// in the m16n8 C layout per 8-column block: d[j] holds rows g and g + 8, columns 8j + 2c and 8j + 2c + 1.
//
// B from shared memory ("K-major": each of the N columns is 16 contiguous k values), in the canonical
// 128-byte-swizzle layout: rows (here x rows, the GEMM's M) of 64 k values = 128 bytes, eight rows = one
// 1024-byte swizzle atom, and the 16-byte chunk c of row r stored at chunk c ^ (r % 8). The atom must be
// 1024-byte aligned. The k16 slice s of a 64-wide k block starts 32 s bytes into the row: its descriptor is
// the block's with the start address advanced by 32 s bytes (the hardware applies the swizzle to the
// address bits, so the XOR still lines up).
//
// The MMA runs asynchronously: registers it reads (A) or writes (the accumulators) must not be touched
// until wgmma_wait says its group is done, and register writes before it need wgmma_fence.
#include "lutmm/common.cuh"
#include "lutmm/mma/wgmma_sm90_shapes.cuh"

namespace lutmm::mma {

// Shared-memory matrix descriptor for a 128-byte-swizzled, K-major tile starting at smem_addr (bytes, a
// 1024-byte-aligned atom plus 32 s for slice s). Fields: start address >> 4 (bits 0-13), leading byte
// offset >> 4 (16-29; unused for swizzled K-major tiles, 1 by convention), stride byte offset >> 4
// (32-45: 1024 bytes from one eight-row atom to the next), swizzle mode (62-63: 1 = 128 bytes).
LUTMM_DEVICE uint64_t wgmma_desc_k_major_sw128(uint32_t smem_addr) {
  return static_cast<uint64_t>((smem_addr & 0x3ffffu) >> 4) | (static_cast<uint64_t>(1) << 16) |
         (static_cast<uint64_t>(1024 >> 4) << 32) | (static_cast<uint64_t>(1) << 62);
}

// Orders this thread's earlier register writes (A fragments, accumulators) before the next wgmma reads them.
LUTMM_DEVICE void wgmma_fence() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
// Closes the group of wgmmas issued since the last commit.
LUTMM_DEVICE void wgmma_commit() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
// Waits until at most kPending committed groups are still running.
template <int kPending>
LUTMM_DEVICE void wgmma_wait() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
#endif
}
// Generic-proxy writes to shared memory (cp.async, plain stores) become visible to the tensor cores' async
// proxy; each writing thread runs it before the barrier that publishes the data.
LUTMM_DEVICE void fence_proxy_async_shared() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

// Tells the compiler that the accumulators change here (they do, asynchronously): no copy of them made
// before this point is reused after it.
template <int kFrags>
LUTMM_DEVICE void wgmma_fence_operands(float (&d)[kFrags][4]) {
#pragma unroll
  for (int j = 0; j < kFrags; ++j)
#pragma unroll
    for (int i = 0; i < 4; ++i) asm volatile("" : "+f"(d[j][i])::"memory");
}

// d (64 x N, this warp's 16 rows) += a (this warp's 16 x 16 A fragment) * B (16 x N at desc_b).
template <int N, bool kBf16>
LUTMM_DEVICE void wgmma_m64k16_rs(float (&d)[N / 8][4], const uint32_t (&a)[4], uint64_t desc_b) {
  static_assert(detail::wgmma_n_supported(N), "an N that scripts/gen-wgmma.py generated");
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  detail::wgmma_rs<N, kBf16>(d, a, desc_b, 1u);
#else
  __trap();  // the host offers the sm90 family on sm_90a targets only
#endif
}

// The same with A (64 x 16) from shared memory too: desc_a describes it like B (K-major, 128-byte swizzle:
// 64 rows of 64 k values, slice s at +32 s bytes). For A tiles that threads do not hold (bench/micro/
// wgmma_peak.cu measures both forms).
template <int N, bool kBf16>
LUTMM_DEVICE void wgmma_m64k16_ss(float (&d)[N / 8][4], uint64_t desc_a, uint64_t desc_b) {
  static_assert(detail::wgmma_n_supported(N), "an N that scripts/gen-wgmma.py generated");
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  detail::wgmma_ss<N, kBf16>(d, desc_a, desc_b, 1u);
#else
  __trap();
#endif
}

}  // namespace lutmm::mma
