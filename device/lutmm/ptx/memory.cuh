#pragma once
// Thin wrappers over single memory instructions (sm_80+): asynchronous global->shared copies, ldmatrix,
// byte permutes. (An L2 evict-first policy on the W copies was tried: ptxas 13.0 emitted an LDGSTS whose
// policy descriptor faulted with 'illegal instruction' on the H200; see docs/NOTES.md.)
#include "lutmm/common.cuh"

namespace lutmm::ptx {

LUTMM_DEVICE uint32_t smem_addr(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

// One 32-bit load at a shared-memory address (smem_addr). Volatile, as the ldmatrix wrappers: the compiler keeps it
// where the source puts it relative to the barriers that publish what it reads.
LUTMM_DEVICE uint32_t lds_u32(uint32_t smem) {
  uint32_t v;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(smem));
  return v;
}

// 16-byte async copy, bypassing L1. src_bytes = 0 zero-fills the destination (out-of-range rows/columns).
LUTMM_DEVICE void cp_async_16(void* smem, const void* gmem, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(smem)), "l"(gmem),
               "r"(valid ? 16 : 0));
}

// The same at a shared-memory address (ptx::smem_addr), always copying 16 bytes.
LUTMM_DEVICE void cp_async_16(uint32_t smem, const void* gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem), "l"(gmem));
}
LUTMM_DEVICE void cp_async_16(uint32_t smem, const void* gmem, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem), "l"(gmem), "r"(valid ? 16 : 0));
}

LUTMM_DEVICE void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int kPending>
LUTMM_DEVICE void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

// Four (two) 8x8 b16 matrices; lane i supplies the row address of matrix i / 8, row i % 8, as a 32-bit
// shared-memory address (ptx::smem_addr): a sum with a constant term becomes the instruction's immediate
// offset (through a generic pointer ptxas kept a register per address: docs/NOTES.md v1.19).
LUTMM_DEVICE void ldmatrix_x4(uint32_t (&r)[4], uint32_t smem_row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_row));
}
LUTMM_DEVICE void ldmatrix_x2(uint32_t (&r)[2], uint32_t smem_row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(smem_row));
}

// The same, transposed: lane i gets elements (2 (i % 4), i / 4) and (2 (i % 4) + 1, i / 4) of each matrix (low
// half first), so a matrix whose rows r alternate between two 16-byte runs A and B hands every lane l the pair
// (A[l / 4], B[l / 4]).
LUTMM_DEVICE void ldmatrix_trans(uint32_t (&r)[4], uint32_t smem_row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_row));
}
LUTMM_DEVICE void ldmatrix_trans(uint32_t (&r)[2], uint32_t smem_row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(smem_row));
}
LUTMM_DEVICE void ldmatrix_trans(uint32_t (&r)[1], uint32_t smem_row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(smem_row));
}

// Read-only global loads that skip L1 (streamed weights are read once).
LUTMM_DEVICE void ldg_stream(uint32_t (&r)[4], const uint32_t* p) {
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "l"(p));
}
LUTMM_DEVICE void ldg_stream(uint32_t (&r)[2], const uint32_t* p) {
  asm volatile("ld.global.nc.L1::no_allocate.v2.u32 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "l"(p));
}
// 3-bit lanes own 12 bytes at a 12-byte stride: only 4-byte alignment is guaranteed, so three words.
LUTMM_DEVICE void ldg_stream(uint32_t (&r)[3], const uint32_t* p) {
#pragma unroll
  for (int i = 0; i < 3; ++i) asm volatile("ld.global.nc.L1::no_allocate.u32 %0, [%1];\n" : "=r"(r[i]) : "l"(p + i));
}

// Brings [p, p + bytes) into L2 without returning data (no register, no shared memory). Safe before
// grid_dependency_wait: a prefetch reads nothing into the program, and L2 stays coherent with later writes.
LUTMM_DEVICE void prefetch_l2_line(const void* p) { asm volatile("prefetch.global.L2 [%0];\n" ::"l"(p)); }

// Whether this architecture overlaps a kernel with the stream's previous one (programmatic dependent launch).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
inline constexpr bool kDependentLaunch = true;
#else
inline constexpr bool kDependentLaunch = false;
#endif
// Programmatic dependent launch (sm_90+; nothing on older GPUs, where kernels never overlap):
// wait until the stream's previous kernel has finished and its writes are visible ...
LUTMM_DEVICE void grid_dependency_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
// ... and let the stream's next kernel start launching its blocks (they wait in grid_dependency_wait).
LUTMM_DEVICE void allow_dependent_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// A block barrier among `threads` threads (a multiple of 32) on hardware barrier `id` (1..15; 0 is
// __syncthreads'): for the warps of a block that sync without the others (the consumer warps of a
// warp-specialized kernel, whose producer warp has its own schedule).
LUTMM_DEVICE void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// atomicAdd with acquire-release semantics at GPU scope: the writes this thread's block made before a
// barrier are visible to whoever reads the new count with acquire, and that reader's later loads see them.
LUTMM_DEVICE uint32_t atomic_add_acq_rel_gpu(uint32_t* address, uint32_t value) {
  uint32_t old;
  asm volatile("atom.add.acq_rel.gpu.global.u32 %0, [%1], %2;\n" : "=r"(old) : "l"(address), "r"(value) : "memory");
  return old;
}

// A GPU-scope store with release semantics and a load with acquire semantics (of a counter other blocks
// released).
LUTMM_DEVICE void store_release_gpu(uint32_t* address, uint32_t value) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;\n" ::"l"(address), "r"(value) : "memory");
}
LUTMM_DEVICE uint32_t load_acquire_gpu(const uint32_t* address) {
  uint32_t v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(address) : "memory");
  return v;
}

// An L2 cache policy that keeps the lines it is given past the streaming reads (createpolicy, sm_80+), and the stores
// that carry it. For the split-K and Stream-K workspace (epilogue/epilogue.cuh): its slots are written every launch at
// the same addresses, but a decode GEMM streams more weight bytes through L2 than L2 holds, so under the default policy
// every launch found its slot lines evicted (written back to DRAM) and wrote them to DRAM again. In the decode copy
// skeleton (bench/micro/switch_fence.cu) 8 KB slot stores at the mid-run Stream-K switches cost 1.2 us of a 27.7 us
// 28672 x 8192 launch under the default policy and nothing with this one (docs/NOTES.md v1.37).
LUTMM_DEVICE uint64_t l2_evict_last_policy() {
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}
LUTMM_DEVICE void store_l2_hint(float4* address, float4 v, uint64_t policy) {
  asm volatile("st.global.L2::cache_hint.v4.f32 [%0], {%1, %2, %3, %4}, %5;\n" ::"l"(address), "f"(v.x), "f"(v.y),
               "f"(v.z), "f"(v.w), "l"(policy)
               : "memory");
}

// Two 64-bit words with relaxed semantics at GPU scope: each word is single-copy atomic, so a word that carries a
// value and its own "written" mark needs no fence between the two (epilogue.cuh: finish_flagged).
LUTMM_DEVICE void store_relaxed_gpu(unsigned long long* address, unsigned long long a, unsigned long long b) {
  asm volatile("st.relaxed.gpu.global.v2.b64 [%0], {%1, %2};\n" ::"l"(address), "l"(a), "l"(b) : "memory");
}
// The same with an L2 cache policy (l2_evict_last_policy).
LUTMM_DEVICE void store_relaxed_gpu(unsigned long long* address, unsigned long long a, unsigned long long b,
                                    uint64_t policy) {
  asm volatile("st.relaxed.gpu.global.L2::cache_hint.v2.b64 [%0], {%1, %2}, %3;\n" ::"l"(address), "l"(a), "l"(b),
               "l"(policy)
               : "memory");
}
LUTMM_DEVICE void load_relaxed_gpu(const unsigned long long* address, unsigned long long& a, unsigned long long& b) {
  asm volatile("ld.relaxed.gpu.global.v2.b64 {%0, %1}, [%2];\n" : "=l"(a), "=l"(b) : "l"(address) : "memory");
}

// Compare-and-swap with acquire-release semantics at GPU scope: returns the value found (== expected: swapped).
LUTMM_DEVICE uint32_t atomic_cas_acq_rel_gpu(uint32_t* address, uint32_t expected, uint32_t desired) {
  uint32_t found;
  asm volatile("atom.cas.acq_rel.gpu.global.b32 %0, [%1], %2, %3;\n"
               : "=r"(found)
               : "l"(address), "r"(expected), "r"(desired)
               : "memory");
  return found;
}

// Nanoseconds on the GPU's global timer (one clock for all SMs; it may advance in steps of up to ~1 us).
LUTMM_DEVICE uint64_t global_timer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

LUTMM_DEVICE uint32_t prmt(uint32_t a, uint32_t b, uint32_t selector) {
  uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(selector));
  return d;
}

}  // namespace lutmm::ptx
