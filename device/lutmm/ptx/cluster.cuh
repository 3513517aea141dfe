#pragma once
// Thread-block clusters (sm_90+): the block's rank in its cluster, the cluster-wide barrier and reads of
// another block's shared memory (distributed shared memory). Compiled only for sm_90 and newer; the
// kernels call them only when the host launched a cluster (GemmParams::cluster_splits).
#include "lutmm/common.cuh"

namespace lutmm::ptx {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
LUTMM_DEVICE uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}

// Every thread of every block of the cluster arrives; shared-memory writes before it (release) are seen by
// reads after it (acquire), also from the other blocks.
LUTMM_DEVICE void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

// The same barrier without ordering memory (a relaxed arrive): for keeping every block's shared memory alive
// until the others are done reading it. The release of cluster_sync costs a MEMBAR.ALL.GPU, which after the
// output stores waits for all of them to reach L2.
LUTMM_DEVICE void cluster_sync_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\nbarrier.cluster.wait.aligned;\n" ::: "memory");
}

// The shared::cluster address of `shared_addr` (a shared::cta address of this block) in block `rank`.
LUTMM_DEVICE uint32_t map_to_rank(uint32_t shared_addr, uint32_t rank) {
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(shared_addr), "r"(rank));
  return r;
}

LUTMM_DEVICE float4 load_cluster_f32x4(uint32_t cluster_addr) {
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(cluster_addr)
               : "memory");
  return v;
}
#endif

}  // namespace lutmm::ptx
