// What a Stream-K block's item ends cost in the copy skeleton of the decode kernels, and which part of them. The
// last-arrival epilogue (gemm_sm80.cuh -> epilogue.cuh finish) stores the item's float partial (256 x 8: 8 KB), meets
// the block at a barrier, and thread 0's acq_rel atomic on the tile's counter (MEMBAR.ALL.GPU, then ATOMG) decides by
// __syncthreads_or whether the block sums; meanwhile the next item's first stages are in flight. Each variant runs
// the whole 28672 x 8192 4-bit stream (264 blocks of 128 threads, 3 stages of 16 KB, 112 KB of shared memory a block,
// launched as programmatic dependents as the kernels are), with at each item end of a block's run:
//   none / stores                 nothing / the slot stores and a barrier
//   stores + relaxed t0           + a relaxed atomic by thread 0 and __syncthreads_or (no fence)
//   stores + acq_rel t0 / t127    + the acq_rel atomic by thread 0 (today's) or by thread 127, which copies nothing
//   acq_rel t0 / t127 alone       the acq_rel atomic without slot stores
//   last-arrival sum              today's protocol whole: slots, atomic, the last arrival's reload, sum, bf16 output
//   flagged words (, staged)      splits 1.. store marked 64-bit words and go on; split 0 (its item ends its run)
//                                 polls them (from registers, or brought into its idle stages by cp.async first)
//   stores at mid-run switches only / at run ends only
//   bulk stores (mid-run only)    the partial staged in the stage just consumed, stored by one cp.async.bulk
//   mid-run stores, one slot for all / with an L2 evict_last policy
// Per launch: microseconds, and a block's mean item end in SM clocks (clock64 around it, thread 0); the protocols'
// bf16 outputs are compared bit for bit with today's (exit status 1 if they differ). On the H200 (docs/NOTES.md
// v1.37): none 27.1-27.7 us; the fence does not wait for the thread's own copies (t0 = t127); the atomic's round
// trip ~1500 clocks, the fence ~800 more with stores; the whole last-arrival protocol +3.5 us, flagged words +9 us
// (split 0 waits for blocks that entered late, holding its slots); and the mid-run slot stores alone +1.2 us whatever
// stores them, but nothing with evict_last or into one shared slot: the slots' lines, evicted by the stream every
// launch, cost DRAM write-backs and misses. The kernels' slot stores carry that policy since.
// No GPU, or a failed CUDA call: a message and exit status 1. Not part of the CMake build; scripts/build-micro
// builds it (-I device) and `scripts/gpu-check micro` runs it.
#include <cstdint>
#include <cstdio>
#include <vector>

#include <cuda_bf16.h>

#include "lutmm/ptx/memory.cuh"
#include "copy_skeleton.hpp"
#include "micro_gpu.hpp"

namespace {

using namespace micro_skeleton;

constexpr int kStages = 3, kTileM = 8;
constexpr int kSlotFloats = kTileRows * kTileM;  // one item's float partial: 8 KB
constexpr int kCopyFree = kThreads - 1;          // the thread that issues no copies

enum Switch {
  none = 0, stores = 1, relaxed_t0 = 2, acq_rel_t0 = 3, acq_rel_t127 = 4, fence_t0 = 5, fence_t127 = 6,
  last_arrival = 7, flagged = 8, flagged_staged = 9, stores_mid_run = 10, stores_run_end = 11,
  bulk_stores = 12, bulk_mid_run = 13, mid_run_one_slot = 14, mid_run_evict_last = 15
};
constexpr int kSwitches = 16;
const char* const kSwitchNames[kSwitches] = {"none", "stores", "stores + relaxed t0", "stores + acq_rel t0 (today)",
                                             "stores + acq_rel t127", "acq_rel t0 alone", "acq_rel t127 alone",
                                             "last-arrival sum (today)", "flagged words", "flagged, staged",
                                             "stores at mid-run switches only", "stores at run ends only",
                                             "bulk stores from shared memory", "bulk stores, mid-run only",
                                             "mid-run stores, one slot for all", "mid-run stores, L2 evict_last"};
constexpr int kMaxSplits = 4;  // (a tile of 64 units meets at most 4 runs of >= 27)
constexpr int kPairs = kSlotFloats / 2 / kThreads;  // 8 pairs of values a thread

__device__ uint32_t relaxed_add(uint32_t* at, uint32_t v) {
  uint32_t old;
  asm volatile("atom.add.relaxed.gpu.global.u32 %0, [%1], %2;\n" : "=r"(old) : "l"(at), "r"(v) : "memory");
  return old;
}

__device__ uint32_t block_of(uint32_t u, uint32_t blocks, uint32_t units) { return ((u + 1) * blocks - 1) / units; }
// The item's float partial: value i of this thread's values (stand-ins for the accumulators).
__device__ float partial_value(float acc, int i) { return acc + static_cast<float>(i & 15); }
__device__ void store_pair_out(__nv_bfloat16* o, int i, float a, float b) {
  *reinterpret_cast<__nv_bfloat162*>(o + i) = __floats2bfloat162_rn(a, b);
}

// One item's end under the three protocols (split s of `splits` blocks on the tile; kMaxSplits slots a tile):
//   last_arrival    every split stores its float slot; thread 0's acq_rel atomic; the last to arrive sums the
//                   slots in split order and stores the output (epilogue.cuh finish);
//   flagged         splits 1.. store marked 64-bit words ((value << 32) | 1) and go on: no barrier, fence or
//                   counter; split 0, whose item always ends its run, polls the words of the others (each thread
//                   its 8 pairs of a slot in flight at once), sums in split order, stores, clears the words;
//   flagged_staged  the same, but split 0 brings the others' words into its (idle, at the run's end) stages by
//                   cp.async first and reads them there: no looks held in registers; any word not yet marked
//                   is polled as above.
__device__ void epilogue(int kind, float acc, int split, int splits, float* slots, unsigned long long* words,
                         uint32_t* counter, __nv_bfloat16* o, uint8_t* smem) {
  const int tid = threadIdx.x;
  if (splits == 1) {
    for (int q = 0; q < kPairs; ++q) {
      const int i = 2 * (tid + q * kThreads);
      store_pair_out(o, i, partial_value(acc, i), partial_value(acc, i + 1));
    }
    return;
  }
  if (kind == last_arrival) {
    float* mine = slots + split * kSlotFloats;
    for (int q = 0; q < kPairs; ++q) {
      const int i = 2 * (tid + q * kThreads);
      __stcg(reinterpret_cast<float2*>(mine + i), make_float2(partial_value(acc, i), partial_value(acc, i + 1)));
    }
    __syncthreads();
    const bool last = __syncthreads_or(tid == 0 && lutmm::ptx::atomic_add_acq_rel_gpu(counter, 1u) ==
                                                       static_cast<uint32_t>(splits - 1));
    if (!last) return;
    float2 v[kMaxSplits][kPairs];  // every load in flight before the first add, as the kernels' sum does
#pragma unroll
    for (int s = 0; s < kMaxSplits; ++s)
#pragma unroll
      for (int q = 0; q < kPairs; ++q)
        v[s][q] = s < splits ? __ldcg(reinterpret_cast<const float2*>(slots + s * kSlotFloats + 2 * (tid + q * kThreads)))
                             : make_float2(0.f, 0.f);
#pragma unroll
    for (int q = 0; q < kPairs; ++q) {
      float a = 0.f, b = 0.f;
#pragma unroll
      for (int s = 0; s < kMaxSplits; ++s) {
        if (s < splits) {
          a += v[s][q].x;
          b += v[s][q].y;
        }
      }
      store_pair_out(o, 2 * (tid + q * kThreads), a, b);
    }
    if (tid == 0) *counter = 0;
    return;
  }
  if (split != 0) {
    unsigned long long* mine = words + (split - 1) * kSlotFloats;
    for (int q = 0; q < kPairs; ++q) {
      const int i = 2 * (tid + q * kThreads);
      const float a = partial_value(acc, i), b = partial_value(acc, i + 1);
      lutmm::ptx::store_relaxed_gpu(mine + i, (static_cast<unsigned long long>(__float_as_uint(a)) << 32) | 1ull,
                                    (static_cast<unsigned long long>(__float_as_uint(b)) << 32) | 1ull);
    }
    return;
  }
  float sum[kPairs][2];
  for (int q = 0; q < kPairs; ++q) {
    const int i = 2 * (tid + q * kThreads);
    sum[q][0] = partial_value(acc, i);
    sum[q][1] = partial_value(acc, i + 1);
  }
  if (kind == flagged_staged) {  // the others' slots into shared memory: 16 KB a slot, in the idle stages
    lutmm::ptx::cp_async_wait<0>();
    __syncthreads();
    for (int s = 0; s < splits - 1; ++s)
      for (int q = 0; q < kSlotFloats * 8 / 16 / kThreads; ++q) {
        const int c = tid + q * kThreads;  // 16-byte chunk c of the slot
        lutmm::ptx::cp_async_16(lutmm::ptx::smem_addr(smem + s * kSlotFloats * 8 + c * 16), words + s * kSlotFloats + 2 * c);
      }
    lutmm::ptx::cp_async_commit();
    lutmm::ptx::cp_async_wait<0>();
    __syncthreads();
  }
  constexpr int kOthers = kMaxSplits - 1;
  unsigned long long look[kOthers][kPairs][2];  // every first look in flight at once
  uint32_t missing = 0;  // bit s * kPairs + q
#pragma unroll
  for (int s = 0; s < kOthers; ++s)
#pragma unroll
    for (int q = 0; q < kPairs; ++q) {
      if (s >= splits - 1) continue;
      const int i = 2 * (tid + q * kThreads);
      if (kind == flagged_staged) {
        const ulonglong2 v = *reinterpret_cast<const ulonglong2*>(smem + (s * kSlotFloats + i) * 8);
        look[s][q][0] = v.x;
        look[s][q][1] = v.y;
      } else {
        lutmm::ptx::load_relaxed_gpu(words + s * kSlotFloats + i, look[s][q][0], look[s][q][1]);
      }
      missing |= 1u << (s * kPairs + q);
    }
  while (missing != 0u) {
#pragma unroll
    for (int s = 0; s < kOthers; ++s)
#pragma unroll
      for (int q = 0; q < kPairs; ++q) {
        const uint32_t bit = 1u << (s * kPairs + q);
        if ((missing & bit) == 0u) continue;
        if ((look[s][q][0] & look[s][q][1] & 1ull) != 0ull)
          missing &= ~bit;
        else
          lutmm::ptx::load_relaxed_gpu(words + s * kSlotFloats + 2 * (tid + q * kThreads), look[s][q][0], look[s][q][1]);
      }
  }
#pragma unroll
  for (int s = 0; s < kOthers; ++s)
#pragma unroll
    for (int q = 0; q < kPairs; ++q) {
      if (s >= splits - 1) continue;
      sum[q][0] += __uint_as_float(static_cast<uint32_t>(look[s][q][0] >> 32));
      sum[q][1] += __uint_as_float(static_cast<uint32_t>(look[s][q][1] >> 32));
      lutmm::ptx::store_relaxed_gpu(words + s * kSlotFloats + 2 * (tid + q * kThreads), 0ull, 0ull);
    }
  for (int q = 0; q < kPairs; ++q) store_pair_out(o, 2 * (tid + q * kThreads), sum[q][0], sum[q][1]);
}

// Where the variants write: the items' float slots (kMaxSplits a tile; the store-only variants use one a block),
// the tiles' counters, the flagged words (kMaxSplits - 1 slots a tile) and the protocols' bf16 outputs.
struct Buffers {
  float* slots;
  uint32_t* counters;
  unsigned long long* words;
  __nv_bfloat16* out_tiles;
};

__host__ __device__ bool is_protocol(int kind) { return kind >= last_arrival && kind <= flagged_staged; }

// The work of variant `kind` where unit u ends an item (a tile's units end inside the run, or the run ends); stage:
// the stage the unit was read from (no copy lands there before the next unit's). Returns the SM clocks it took.
__device__ long long item_end(int kind, uint32_t u, uint32_t first, uint32_t end, int stage, float acc, uint32_t& fold,
                              const Buffers& b, uint8_t* smem) {
  const int tid = threadIdx.x;
  const bool run_end = u + 1 == end;
  const bool mid_run_only = kind == stores_mid_run || kind == bulk_mid_run || kind == mid_run_one_slot ||
                            kind == mid_run_evict_last;
  if (kind == none || (mid_run_only && run_end) || (kind == stores_run_end && !run_end)) return 0;
  const long long t0 = clock64();
  const uint32_t tile = u / kKTiles, units = (kRows / kTileRows) * kKTiles, blocks = gridDim.x;
  float* const own_slot = b.slots + static_cast<int64_t>(blockIdx.x) * kSlotFloats;
  const float4 partial = make_float4(acc, acc + 1.f, acc + 2.f, acc + 3.f);  // (each thread 16 floats of the slot)
  if (is_protocol(kind)) {  // the whole epilogue of an item, as the kernels' protocols would run it
    const uint32_t tile_first = tile * kKTiles, tile_end = tile_first + kKTiles;
    const uint32_t item_first = tile_first > first ? tile_first : first;
    const int split = static_cast<int>(block_of(item_first, blocks, units) - block_of(tile_first, blocks, units));
    const int splits = static_cast<int>(block_of(tile_end - 1, blocks, units) - block_of(tile_first, blocks, units) + 1);
    epilogue(kind, acc, split, splits, b.slots + static_cast<int64_t>(tile) * kMaxSplits * kSlotFloats,
             b.words + static_cast<int64_t>(tile) * (kMaxSplits - 1) * kSlotFloats, b.counters + tile,
             b.out_tiles + static_cast<int64_t>(tile) * kSlotFloats, smem);
  } else if (kind == bulk_stores || kind == bulk_mid_run) {  // the partial through the stage just read, by one bulk copy
    uint8_t* const tile_smem = smem + stage * kStageBytes;
    __syncthreads();  // (every warp is done reading the stage)
#pragma unroll
    for (int q = 0; q < kSlotFloats / 4 / kThreads; ++q) reinterpret_cast<float4*>(tile_smem)[tid + q * kThreads] = partial;
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    if (tid == 0) {
      asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(own_slot),
                   "r"(lutmm::ptx::smem_addr(tile_smem)), "r"(kSlotFloats * 4) : "memory");
      asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
      asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");  // (before the next copy into the stage)
    }
  } else {
    if (kind != fence_t0 && kind != fence_t127) {  // the block's partial of the tile
      float4* const slot = reinterpret_cast<float4*>(kind == mid_run_one_slot ? b.slots : own_slot);
      const uint64_t keep_in_l2 = lutmm::ptx::l2_evict_last_policy();
#pragma unroll
      for (int q = 0; q < kSlotFloats / 4 / kThreads; ++q) {
        if (kind == mid_run_evict_last)
          lutmm::ptx::store_l2_hint(slot + tid + q * kThreads, partial, keep_in_l2);
        else
          __stcg(slot + tid + q * kThreads, partial);
      }
    }
    __syncthreads();
    const bool arrives = kind == relaxed_t0 || kind == acq_rel_t0 || kind == acq_rel_t127 || kind == fence_t0 ||
                         kind == fence_t127;
    if (arrives) {
      const int arriver = kind == acq_rel_t127 || kind == fence_t127 ? kCopyFree : 0;
      bool last = false;
      if (tid == arriver)
        last = (kind == relaxed_t0 ? relaxed_add(b.counters + tile, 1u)
                                   : lutmm::ptx::atomic_add_acq_rel_gpu(b.counters + tile, 1u)) == 0xffffffffu;
      if (__syncthreads_or(last)) fold ^= 1u;  // (never: the counters only grow within a run)
    }
  }
  return clock64() - t0;
}

// Block b's units [b U / G, (b + 1) U / G) of U = tiles x k tiles, tile-major (copy_skeleton.hpp: stream_units); at
// each item end of the run the block does the work of variant `kind`. Thread kCopyFree copies nothing except under the
// protocols (their outputs are compared).
__global__ void __launch_bounds__(kThreads) stream_switch(const uint8_t* w, int kind, Buffers b, uint32_t* out,
                                                          unsigned long long* switch_clocks) {
  extern __shared__ __align__(16) uint8_t smem[];
  const uint32_t units = (kRows / kTileRows) * kKTiles, blocks = gridDim.x;
  const uint32_t first = blockIdx.x * units / blocks, end = (blockIdx.x + 1) * units / blocks;
  const int tid = threadIdx.x;
  float acc = 0.f;
  unsigned long long clocks = 0;
  const uint32_t fold = stream_units<kStages>(
      smem, first, end, tid, /*copies=*/tid != kCopyFree || is_protocol(kind),
      [&](uint32_t u, int c) { return w + strips_chunk_offset(static_cast<int>(u / kKTiles), static_cast<int>(u % kKTiles), c); },
      [&](uint32_t u, int stage, uint32_t& f) {
        acc += __uint_as_float(f & 0x3f7fffffu);
        if ((u + 1) % kKTiles != 0 && u + 1 != end) return;
        const long long c = item_end(kind, u, first, end, stage, acc, f, b, smem);
        if (tid == 0) clocks += static_cast<unsigned long long>(c);
      });
  out[blockIdx.x * kThreads + tid] = fold ^ __float_as_uint(acc);
  if (tid == 0) atomicAdd(switch_clocks, clocks);
}

}  // namespace

int main() {
  const int sms = micro_sm_count_or_exit();
  const int blocks = 2 * sms, copies = 5;  // 5 x 117 MB: > 4x a 60 MB L2
  const std::vector<uint8_t*> w = micro_weight_copies(kWeightBytes, copies);
  uint32_t* out = nullptr;
  float* slots = nullptr;
  uint32_t* counters = nullptr;
  unsigned long long* switch_clocks = nullptr;
  const int tiles = kRows / kTileRows;
  micro_check_or_exit(cudaMalloc(&out, sizeof(uint32_t) * blocks * kThreads), "cudaMalloc of the output");
  micro_check_or_exit(cudaMalloc(&slots, sizeof(float) * kSlotFloats * kMaxSplits * tiles), "cudaMalloc of the slots");
  unsigned long long* words = nullptr;
  __nv_bfloat16* out_tiles = nullptr;
  const size_t word_bytes = sizeof(unsigned long long) * kSlotFloats * (kMaxSplits - 1) * tiles;
  micro_check_or_exit(cudaMalloc(&words, word_bytes), "cudaMalloc of the flagged words");
  micro_check_or_exit(cudaMemset(words, 0, word_bytes), "cudaMemset of the flagged words");
  micro_check_or_exit(cudaMalloc(&out_tiles, sizeof(__nv_bfloat16) * kSlotFloats * tiles), "cudaMalloc of the outputs");
  micro_check_or_exit(cudaMalloc(&counters, sizeof(uint32_t) * tiles), "cudaMalloc of the counters");
  micro_check_or_exit(cudaMemset(counters, 0, sizeof(uint32_t) * tiles), "cudaMemset of the counters");
  micro_check_or_exit(cudaMalloc(&switch_clocks, sizeof(unsigned long long)), "cudaMalloc of the clock sum");
  const int smem = 112 * 1024;
  micro_check_or_exit(cudaFuncSetAttribute(stream_switch, cudaFuncAttributeMaxDynamicSharedMemorySize, smem),
                      "cudaFuncSetAttribute (dynamic shared memory)");
  cudaLaunchAttribute attribute;
  cudaLaunchConfig_t config = micro_launch_config(blocks, kThreads, smem, /*pdl=*/true, attribute);
  std::printf("28672 x 8192 4-bit, %d blocks of %d threads, %d stages of 16 KB, 112 KB a block, pdl; switch at each "
              "tile end of a block's Stream-K run (8 KB slot)\n", blocks, kThreads, kStages);
  constexpr int kLaunches = 30;
  int64_t switches_a_launch = 0;  // the item ends of every block's run (as the kernel finds them)
  {
    const uint32_t units = tiles * kKTiles;
    for (uint32_t b = 0; b < static_cast<uint32_t>(blocks); ++b)
      for (uint32_t u = b * units / blocks, e = (b + 1) * units / blocks; u < e; ++u)
        switches_a_launch += (u + 1) % kKTiles == 0 || u + 1 == e;
  }
  std::vector<uint16_t> reference;
  bool differ = false;
  for (int pass = 0; pass < 2; ++pass) {
    for (int kind = 0; kind < kSwitches; ++kind) {
      micro_check_or_exit(cudaMemset(switch_clocks, 0, sizeof(unsigned long long)), "cudaMemset of the clock sum");
      micro_check_or_exit(cudaMemset(counters, 0, sizeof(uint32_t) * tiles), "cudaMemset of the counters");
      micro_check_or_exit(cudaMemset(out_tiles, 0xff, sizeof(__nv_bfloat16) * kSlotFloats * tiles), "cudaMemset of the outputs");
      int launches = 0;
      const float ms = best_of_runs_ms([&] {
        for (int l = 0; l < kLaunches; ++l, ++launches)
          micro_check_or_exit(cudaLaunchKernelEx(&config, stream_switch, static_cast<const uint8_t*>(w[l % copies]), kind,
                                                 Buffers{slots, counters, words, out_tiles}, out, switch_clocks),
                             "a launch");
      });
      micro_check_or_exit(cudaGetLastError(), "the timed launches");
      unsigned long long clocks = 0;
      micro_check_or_exit(cudaMemcpy(&clocks, switch_clocks, sizeof clocks, cudaMemcpyDeviceToHost), "cudaMemcpy of the clocks");
      const double us = ms * 1e3 / kLaunches;
      const double per_switch = static_cast<double>(clocks) / (static_cast<double>(launches) * switches_a_launch);
      // The protocols' outputs (of the last launch, whose weight copy is the same for all) bit for bit against today's.
      const char* check = "";
      if (is_protocol(kind)) {
        std::vector<uint16_t> got(kSlotFloats * tiles);
        micro_check_or_exit(cudaMemcpy(got.data(), out_tiles, got.size() * 2, cudaMemcpyDeviceToHost), "cudaMemcpy of the outputs");
        if (kind == last_arrival) reference = got;
        check = got == reference ? "  outputs = today's" : "  OUTPUTS DIFFER";
        if (got != reference) differ = true;
      }
      std::printf("pass %d  %-30s %8.2f us a launch  %6.3f TB/s  ~%6.0f clocks a switch%s\n", pass, kSwitchNames[kind], us,
                  kWeightBytes / us / 1e6, per_switch, check);
    }
  }
  const cudaError_t err = cudaDeviceSynchronize();
  if (err != cudaSuccess) {
    std::printf("CUDA error: %s\n", cudaGetErrorString(err));
    return 1;
  }
  return differ ? 1 : 0;
}
