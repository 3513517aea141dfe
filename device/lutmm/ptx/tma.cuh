#pragma once
// The tensor memory accelerator (TMA, sm_90+) and the transaction barriers it reports to.
//
// A TMA copy moves a box of a 2-D tensor (described by a 128-byte tensor map the host encodes,
// jit::encode_tensor_map_2d_u16 in src/jit/loaded_kernel.cpp) from global into shared memory without threads, in the 128-byte swizzle that
// wgmma reads, zero-filling what lies outside the tensor. `.multicast::cluster` writes the same box into
// several blocks of a cluster at the same shared-memory offset, reading L2 once for all of them; each
// destination block's mbarrier at the same offset counts the bytes that landed (complete_tx).
//
// An mbarrier phase completes when its pending arrivals reach zero and the bytes it was told to expect
// (arrive.expect_tx) have all arrived. Bytes may land before the expecting arrive: the phase cannot complete
// before that arrive either way. Waiters name the phase by its parity.
#include "lutmm/common.cuh"

namespace lutmm::ptx {

// The 128-byte tensor map, as cuTensorMapEncodeTiled writes it (CUtensorMap: opaque, 64-byte aligned).
// Lives in the kernel's __grid_constant__ parameters, whose generic address the TMA instructions take.
struct alignas(64) TensorMap {
  uint64_t opaque[16];
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
LUTMM_DEVICE void mbarrier_init(uint32_t bar, uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(arrivals) : "memory");
}
// Makes the initialisations above visible to the other blocks of the cluster (and to the TMA unit).
LUTMM_DEVICE void fence_mbarrier_init_cluster() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
// One arrival on this block's barrier, telling it to expect `bytes` more of this phase's transactions.
LUTMM_DEVICE void mbarrier_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
// One arrival on a barrier of any block of the cluster (`cluster_bar`: a shared::cluster address, mapa).
// Release at CTA scope, as CUTLASS's cluster barriers do: the arrival tells a peer that this block's
// wgmmas are done reading a stage (their reads completed at wgmma.wait), not that data is ready; at
// cluster scope the release costs a MEMBAR.ALL.GPU, which waits for the thread's outstanding loads.
LUTMM_DEVICE void mbarrier_arrive_cluster(uint32_t cluster_bar) {
  asm volatile("mbarrier.arrive.release.cta.shared::cluster.b64 _, [%0];\n" ::"r"(cluster_bar) : "memory");
}
// Waits until this block's barrier `bar` completed the phase of parity `parity`: the arrivals above, or the
// bytes a TMA copy wrote into this block (async proxy, visible to the wgmmas after the wait). kClusterAcquire:
// with acquire at cluster scope, for bytes other blocks of the cluster copied in (copy_shared_to_cluster),
// visible to this thread's loads after the wait.
#define LUTMM_MBARRIER_WAIT_LOOP(SEM)                               \
  "{\n"                                                             \
  ".reg .pred done;\n"                                              \
  "WAIT_%=:\n"                                                      \
  "mbarrier.try_wait.parity" SEM ".shared::cta.b64 done, [%0], %1;\n" \
  "@!done bra WAIT_%=;\n"                                           \
  "}\n"
template <bool kClusterAcquire = false>
LUTMM_DEVICE void mbarrier_wait(uint32_t bar, uint32_t parity) {
  if constexpr (kClusterAcquire) {
    asm volatile(LUTMM_MBARRIER_WAIT_LOOP(".acquire.cluster")::"r"(bar), "r"(parity) : "memory");
  } else {
    asm volatile(LUTMM_MBARRIER_WAIT_LOOP("")::"r"(bar), "r"(parity) : "memory");
  }
}
#undef LUTMM_MBARRIER_WAIT_LOOP

// `bytes` (a multiple of 16, both addresses 16-byte aligned) of this block's shared memory at `src` into the
// shared memory of another block of the cluster (`dst`, `dst_bar`: shared::cluster addresses, mapa), counted
// on that block's mbarrier as they land. The async proxy reads `src`: its writers run
// fence.proxy.async.shared::cta before the barrier that hands it over, and `src` must stay as it is (and
// the block alive) until the receiver has the bytes. Unlike a barrier with release semantics at cluster
// scope (a MEMBAR.ALL.GPU), the copy's completion orders nothing else the threads did.
LUTMM_DEVICE void copy_shared_to_cluster(uint32_t dst, uint32_t src, uint32_t bytes, uint32_t dst_bar) {
  asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "r"(src), "r"(bytes), "r"(dst_bar)
               : "memory");
}

// Box {col, row} (innermost first) of the tensor `map` into shared memory `dst` of every block in
// `cta_mask` (bit r: cluster rank r), each completing `bytes` on its mbarrier at offset `bar`.
LUTMM_DEVICE void tma_load_2d_multicast(uint32_t dst, const TensorMap* map, int col, int row, uint32_t bar,
                                        uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(col), "r"(row), "r"(bar), "h"(cta_mask)
      : "memory");
}
// The same box into this block's shared memory alone.
LUTMM_DEVICE void tma_load_2d(uint32_t dst, const TensorMap* map, int col, int row, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(col), "r"(row), "r"(bar)
      : "memory");
}
// One arrival on this block's barrier (release: this thread's earlier reads of what the barrier guards are
// done before whoever waits on it rewrites that memory).
LUTMM_DEVICE void mbarrier_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// One arrival on this block's barrier once every cp.async this thread issued before has landed (noinc: the
// barrier's arrival count includes it).
LUTMM_DEVICE void cp_async_mbarrier_arrive(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
// `bytes` (a multiple of 16; both addresses 16-byte aligned) of global memory at `src` into this block's shared memory
// at `dst`, counted on this block's mbarrier `bar` as they land: one instruction for a contiguous run that would
// take bytes / 16 cp.async lanes, and whose bytes reach shared memory without passing through the threads' load path.
LUTMM_DEVICE void bulk_copy_global_to_shared(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}
// Brings the tensor map into the TMA unit's cache ahead of the first copy.
LUTMM_DEVICE void prefetch_tensor_map(const TensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}
#endif

}  // namespace lutmm::ptx
