// The decode main loop's compute alone, at the rate an SM runs it: each warp dequantizes 16-row strips (two, as the
// kernels do; one to four in the variants) of a 256-deep k tile from packed 4-bit words with the kernels' own lookup-table dequantizer (lut/lut_dequant.cuh),
// multiplies them with x fragments read by ldmatrix (M = 1..8: one n8 block) and folds each 128-wide group's
// partial sums with its scale, exactly the sequence of sm80_n128_m8_k256 (kernels/gemm_sm80.cuh), but with the
// W words, x and scales resident in shared memory: no copies, no barriers, no global memory. It says how fast
// the lookup chain (PRMT -> LDS -> HMMA) can go at all, in W bytes per second, against the ~4.5 TB/s the H200
// reads: docs/NOTES.md v1.23-v1.24 (the decode kernels run 121 MB in 29.4 us with their copies off, ~4.1 TB/s).
// Variants: the table with 256-byte rows (one PRMT per address) or 128-byte rows (shift and mask), the register
// table, warps of one block split between the two, the lookups without the MMAs, the MMAs without the lookups;
// 4, 8 or 16 warps a block, one or two blocks an SM.
// Not part of the CMake build; scripts/build-micro builds it (-I device) and `scripts/gpu-check micro` runs it.
#include <cstdio>
#include <type_traits>
#include <vector>
#include <cuda_runtime.h>

#include "lutmm/lut/lut_dequant.cuh"
#include "lutmm/mma/mma_sm80.cuh"
#include "micro_gpu.hpp"

using namespace lutmm;

enum class Work { lookups_and_mma, lookups_only, mma_only };

constexpr int kMaxStrips = 4, kAtoms = 4, kGroupSlices = 8;  // a warp: up to 4 strips x 256 of K (4 atoms of 4
                                                               // slices), G = 128
// W words of a warp with `strips` strips (4-bit: 4 words a lane and atom)
LUTMM_HOST_DEVICE constexpr int words_per_warp(int strips) { return strips * kAtoms * 32 * 4; }
constexpr int kXBytes = 8 * 256 * 2;                          // 8 rows x 256 bf16
constexpr int kScaleCount = 2 * 32 * kMaxStrips * 16;

// A warp's kind: which table it dequantizes with and how many 16-row strips it owns.
struct Mix {
  int reg_warps_of_4 = 0;  // of every four warps, this many use the register table (RegisterLut: byte permutes on
                           // the ALUs), the others the kernel's table (kRowBytes: the shared pair table or, at 0,
                           // the register table too)
  int shared_strips = 2, reg_strips = 2;
  LUTMM_HOST_DEVICE bool reg(int warp) const { return warp % 4 < reg_warps_of_4; }
  LUTMM_HOST_DEVICE int strips(int warp) const { return reg(warp) ? reg_strips : shared_strips; }
};

// kFenced: one atom (four slices) per turn of a loop that is not unrolled, so the lookups of the next atom are not
// hoisted above this one's MMAs: unrolled over the whole k tile, ptxas issues its lookups far ahead (the decode
// kernels, whose copies and barriers constrain it, hold ~126 registers).
// Warps of both kinds in one block (Mix): whether warps that lean on different pipes raise what an SM dequantizes
// (v1.18 mixed the two inside every warp, which lengthened each warp's chain, and lost).
template <int kRowBytes, Work kWork, bool kFenced, int kSharedStrips, int kRegStrips, int kRegWarpsOf4>
__global__ void lookup_loop(const uint16_t* table, const uint32_t* words_in, float* out, long long* warp_cycles,
                            int iters) {
  constexpr int kWordsPerWarp = words_per_warp(kSharedStrips > kRegStrips ? kSharedStrips : kRegStrips);
  extern __shared__ __align__(128) uint8_t smem[];
  uint32_t* const pair_table = lut::pair_table_storage<4, kRowBytes>(smem);
  const int lut_bytes = kRowBytes == 256 ? lut::SharedPairLut<4, 256>::kBytes : 0;
  uint32_t* const words = reinterpret_cast<uint32_t*>(smem + lut_bytes);
  uint8_t* const x = smem + lut_bytes + (blockDim.x / 32) * kWordsPerWarp * 4;
  uint16_t* const scales = reinterpret_cast<uint16_t*>(x + kXBytes);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const lut::KernelLut<4, kRowBytes> dequantizer(pair_table, table, threadIdx.x, blockDim.x);
  lut::RegisterLut<4> register_table;
  if constexpr (kRegWarpsOf4 > 0) register_table.load(lut::table_entry_of_lane<4>(table, lane));
  for (int i = threadIdx.x; i < (blockDim.x / 32) * kWordsPerWarp; i += blockDim.x) words[i] = words_in[i % 4096];
  for (int i = threadIdx.x; i < kXBytes / 4; i += blockDim.x)
    reinterpret_cast<uint32_t*>(x)[i] = 0x3f803f80u ^ (static_cast<uint32_t>(i) * 0x00010001u & 0x003f003fu);
  for (int i = threadIdx.x; i < kScaleCount; i += blockDim.x) scales[i] = 0x3f80;
  __syncthreads();

  const uint32_t* const warp_words = words + warp * kWordsPerWarp;
  // ldmatrix rows: lane supplies row lane & 7 of matrix lane >> 3 (chunk 2t + matrix, swizzled by the row)
  const uint32_t x_base = ptx::smem_addr(x) + (lane & 7) * 512;
  const int x_key = ((lane >> 3) & 1) ^ (lane & 7);
  float sum = 0.f;
  uint32_t checksum = 0;
  // The loop of one kind of warp: kStrips strips dequantized by `lookup`.
  auto run_loop = [&](const auto& lookup, auto strips) {
    constexpr int kStrips = decltype(strips)::value;
    float acc[kStrips][4] = {};
    [[maybe_unused]] float part[kStrips][4];
    // One 4-slice atom of the strips (the lookups of its 16 k values, its MMAs, a group's fold every two atoms).
    // (rot: which atom's words an iteration reads rotates with the iteration, so that no load is loop-invariant:
    // the compiler hoisted invariant lookups out of the iteration loop otherwise)
    auto atom_step = [&](int atom, int rot) {
      uint32_t w[kStrips][4];
#pragma unroll
      for (int fn = 0; fn < kStrips; ++fn)
        lut::load_lane_words<4>(warp_words + ((fn * kAtoms + ((atom + rot) & (kAtoms - 1))) * 32 + lane) * 4, w[fn]);
#pragma unroll
      for (int s = 0; s < 4; ++s) {
        const int t = atom * 4 + s;
        uint32_t b[2];
        ptx::ldmatrix_x2(b, x_base + (((2 * t) ^ x_key) << 4));
#pragma unroll
        for (int fn = 0; fn < kStrips; ++fn) {
          uint32_t a[4];
          if constexpr (kWork == Work::mma_only) {
#pragma unroll
            for (int i = 0; i < 4; ++i) a[i] = w[fn][i] & 0x3fff3fffu;
          } else {
            lookup.slice(w[fn], s, a);
          }
          if constexpr (kWork == Work::lookups_only) {
            checksum ^= a[0] ^ a[1] ^ a[2] ^ a[3];
          } else {
            if (t % kGroupSlices == 0)
#pragma unroll
              for (int i = 0; i < 4; ++i) part[fn][i] = 0.f;
            mma::mma_m16n8k16<true>(part[fn], a, b);
            if (t % kGroupSlices == kGroupSlices - 1) {
              const float lo = mma::to_float<true>(scales[(t / kGroupSlices) * 64 + fn * 16 + (lane >> 2)]);
              const float hi = mma::to_float<true>(scales[(t / kGroupSlices) * 64 + fn * 16 + 8 + (lane >> 2)]);
              acc[fn][0] += part[fn][0] * lo;
              acc[fn][1] += part[fn][1] * lo;
              acc[fn][2] += part[fn][2] * hi;
              acc[fn][3] += part[fn][3] * hi;
            }
          }
        }
      }
    };
    for (int it = 0; it < iters; ++it) {
      if constexpr (kFenced) {
#pragma unroll 1
        for (int atom = 0; atom < kAtoms; ++atom) atom_step(atom, it);
      } else {
#pragma unroll
        for (int atom = 0; atom < kAtoms; ++atom) atom_step(atom, it);
      }
    }
    for (int fn = 0; fn < kStrips; ++fn) sum += acc[fn][0] + acc[fn][1] + acc[fn][2] + acc[fn][3];
  };
  const long long start = clock64();
  if (kRegWarpsOf4 > 0 && warp % 4 < kRegWarpsOf4) {
    run_loop(register_table, std::integral_constant<int, kRegStrips>{});
  } else {
    run_loop(dequantizer, std::integral_constant<int, kSharedStrips>{});
  }
  if (lane == 0) warp_cycles[blockIdx.x * (blockDim.x / 32) + warp] = clock64() - start;
  // (never true, but not provably so: keeps every lookup and MMA alive; with the checksum folded into a float the
  // compiler proved the store dead for the lookups-only variant and dropped its loop)
  if (sum == 1234.5f || checksum == 0x9e3779b9u) out[threadIdx.x] = sum;
}

struct Buffers {
  const uint16_t* table;
  const uint32_t* words;
  float* out;
  long long* warp_cycles;
};

// One variant at warps_per_block x blocks_per_sm warps an SM: W bytes a second over every warp's strips (the kernel
// ends with its slowest warp), and for mixed blocks each kind's cycles per k tile.
template <int kRowBytes, Work kWork, bool kFenced = true, int kSharedStrips = 2, int kRegStrips = 2,
          int kRegWarpsOf4 = 0>
void run(const char* what, int sms, int warps_per_block, int blocks_per_sm, const Buffers& buffers) {
  const Mix mix{kRegWarpsOf4, kSharedStrips, kRegStrips};
  const int lut_bytes = kRowBytes == 256 ? lut::SharedPairLut<4, 256>::kBytes : 0;
  const int smem = lut_bytes + warps_per_block * words_per_warp(kSharedStrips > kRegStrips ? kSharedStrips : kRegStrips) * 4 +
                   kXBytes + kScaleCount * 2;
  auto kernel = lookup_loop<kRowBytes, kWork, kFenced, kSharedStrips, kRegStrips, kRegWarpsOf4>;
  cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  int resident = 0;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, 32 * warps_per_block, smem);
  if (resident < blocks_per_sm) {
    std::printf("%-26s warps %2d x %d blocks: does not fit (%d resident, %d KB a block)\n", what, warps_per_block,
                blocks_per_sm, resident, smem / 1024);
    return;
  }
  const dim3 grid(sms * blocks_per_sm), block(32 * warps_per_block);
  const int iters = 2048;
  kernel<<<grid, block, smem>>>(buffers.table, buffers.words, buffers.out, buffers.warp_cycles, 8);
  const float best = best_of_runs_ms([&] {
    kernel<<<grid, block, smem>>>(buffers.table, buffers.words, buffers.out, buffers.warp_cycles, iters);
  });
  // weights a warp dequantizes per iteration: its strips x 16 rows x 256 of K; 4-bit: half a byte each
  double weights = 0;
  for (int w = 0; w < warps_per_block; ++w) weights += static_cast<double>(mix.strips(w)) * 16 * 256 * iters;
  weights *= grid.x;
  int clock_khz = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
  std::vector<long long> cycles(static_cast<size_t>(grid.x) * warps_per_block);
  cudaMemcpy(cycles.data(), buffers.warp_cycles, cycles.size() * sizeof(long long), cudaMemcpyDeviceToHost);
  double reg = 0, shared = 0;
  int n_reg = 0, n_shared = 0;
  for (size_t i = 0; i < cycles.size(); ++i) {
    const bool is_reg = mix.reg(static_cast<int>(i % warps_per_block));
    (is_reg ? reg : shared) += static_cast<double>(cycles[i]);
    (is_reg ? n_reg : n_shared) += 1;
  }
  cudaFuncAttributes attributes{};
  cudaFuncGetAttributes(&attributes, kernel);
  std::printf("%-26s %3d regs, warps %2d x %d blocks: %6.2f TB/s of 4-bit W  (%.3f ms; cycles a k tile:", what,
              attributes.numRegs, warps_per_block, blocks_per_sm, weights * 0.5 / (best * 1e-3) / 1e12, best);
  if (n_shared) std::printf(" %s warps %.0f", kRowBytes ? "pair-table" : "register-table", shared / n_shared / iters);
  if (n_reg) std::printf(" register-table warps %.0f", reg / n_reg / iters);
  std::printf(")\n");
}

int main() {
  const int sms = micro_sm_count_or_exit();
  uint16_t host_table[16];
  for (int i = 0; i < 16; ++i) host_table[i] = static_cast<uint16_t>(0x3c00 + 0x40 * i - 0x200);  // finite bf16
  uint32_t host_words[4096];
  uint32_t v = 12345u;
  for (auto& w : host_words) w = (v = v * 1664525u + 1013904223u);
  uint16_t* table;
  uint32_t* words;
  float* out;
  long long* warp_cycles;
  cudaMalloc(&table, sizeof host_table);
  cudaMalloc(&words, sizeof host_words);
  cudaMalloc(&out, 512 * sizeof(float));
  cudaMalloc(&warp_cycles, 16 * 2 * 1024 * sizeof(long long));
  cudaMemcpy(table, host_table, sizeof host_table, cudaMemcpyHostToDevice);
  cudaMemcpy(words, host_words, sizeof host_words, cudaMemcpyHostToDevice);
  const Buffers b{table, words, out, warp_cycles};
  constexpr auto kFull = Work::lookups_and_mma;
  for (const auto& [warps, blocks] : {std::pair{4, 2}, std::pair{8, 1}, std::pair{8, 2}, std::pair{16, 1}}) {
    run<256, kFull>("lutsmem256 full", sms, warps, blocks, b);
    run<256, kFull, false>("lutsmem256 unfenced", sms, warps, blocks, b);
    run<256, kFull, false, 3>("lutsmem256 unfenced 3str", sms, warps, blocks, b);
    run<256, Work::lookups_only>("lutsmem256 lookups", sms, warps, blocks, b);
    run<128, kFull>("lutsmem full", sms, warps, blocks, b);
    run<256, Work::mma_only>("mma only", sms, warps, blocks, b);
    run<0, kFull>("lutreg full", sms, warps, blocks, b);
    run<0, kFull, false>("lutreg unfenced", sms, warps, blocks, b);
    // mixed blocks: one warp in four (or two) on the register table, with fewer strips where it is slower
    run<256, kFull, true, 2, 2, 1>("mix 1:3 2/2str", sms, warps, blocks, b);
    run<256, kFull, false, 2, 2, 1>("mix 1:3 2/2str unf", sms, warps, blocks, b);
    run<256, kFull, false, 3, 2, 1>("mix 1:3 3/2str unf", sms, warps, blocks, b);
    run<256, kFull, false, 2, 1, 1>("mix 1:3 2/1str unf", sms, warps, blocks, b);
    run<256, kFull, false, 4, 3, 1>("mix 1:3 4/3str unf", sms, warps, blocks, b);
    run<256, kFull, false, 3, 2, 2>("mix 2:2 3/2str unf", sms, warps, blocks, b);
    run<256, kFull, false, 2, 2, 2>("mix 2:2 2/2str unf", sms, warps, blocks, b);
  }
  std::printf("err %s\n", cudaGetErrorString(cudaGetLastError()));
}
