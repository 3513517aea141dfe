#pragma once
// The argument block of the sm80 GEMM kernel, shared verbatim by the host runtime and the device code.
#include "lutmm/common.cuh"
#include "lutmm/scheduler/fast_divisor.cuh"

namespace lutmm {

// The trace buffer (GemmParams::trace; ptx/timeline.cuh writes it, runtime/trace.cpp reads it): word 0 counts the
// records taken, which start at word kTraceHeaderWords, kTraceRecordWords words each, at most kTraceCapacity.
inline constexpr int kTraceHeaderWords = 16, kTraceRecordWords = 24;
inline constexpr unsigned long long kTraceCapacity = 1ull << 18;  // (48 MB)
// The words of one record: globaltimer ns at entry, dependency met and exit; the kernel's tag, SM and block; SM
// cycles from entry to marks 1..5 (Timeline::mark; ~0 where a kernel has no such mark); the grid's blocks; cycles
// from entry to the two marks before the dependency wait (Timeline::mark_before_wait); a block with several items
// (Stream-K) records marks 2..5 of its last item, its item count and, of its first item, the cycles from entry to
// its main loop's end, its tile staged and its epilogue done (~0 where it has one item).
enum TraceWord : int {
  kTraceEntryNs, kTraceDependencyNs, kTraceExitNs, kTraceTag, kTraceSm, kTraceBlockX, kTraceBlockY, kTraceBlockZ,
  kTraceMarkCycles,                        // marks 1..5: kTraceMarkCycles + mark - 1
  kTraceGridBlocks = kTraceMarkCycles + 5,
  kTraceBeforeWaitCycles,                  // the two marks before the wait: + 0, + 1
  kTraceItems = kTraceBeforeWaitCycles + 2,  // the items the block finished
  kTraceFirstItemCycles,                   // the first item's main loop end, tile staged, epilogue done: + 0, + 1, + 2
  kTraceUsedWords = kTraceFirstItemCycles + 3
};
static_assert(kTraceUsedWords <= kTraceRecordWords, "a trace record fits its slot");

// Split-K over flagged slots (GemmParams::split_flags): at most this many splits of a tile.
inline constexpr int kFlaggedMaxSplits = 4;

struct GemmParams {
  const uint16_t* x;        // [m][k] activations
  uint16_t* out;            // [m][n]
  const uint16_t* bias;     // [n] or null
  const uint32_t* packed;   // packed codes (layout/packed_layout.cuh)
  const uint16_t* table;    // 2^bits values
  const uint16_t* scales;   // [scale_rows][n_padded]
  float* workspace;         // split-K / Stream-K partial tiles: [tile][split][tile_m * tile_n]
  uint32_t* tile_counters;  // one per output tile; 0 between launches (the last block resets it)
  int m, n, k;
  int n_padded, k_padded;
  int k_tiles;              // k_padded / tile_k
  int k_tiles_per_split;
  int splits;               // gridDim.z (Stream-K: the most blocks sharing one tile, the workspace's stride)
  int cluster_splits;       // 1: the splits of a tile form one thread-block cluster (sm_90+) and reduce
                            // through distributed shared memory; workspace and counters are then unused
  int tiles_n, tiles_m;     // output tiles along N and M (Stream-K, scheduler/stream_k.cuh: a 1-D grid of one
                            // wave of blocks, each taking a run of the tiles_n x tiles_m x k_tiles units)
  scheduler::StreamKDivisors stream_k;  // (Stream-K: scheduler::stream_k_divisors; unused by split-K)
  int dependents_early;     // 1: let the stream's next kernel launch at the start, not after the main loop
                            // (runtime/gemm.cpp decides: where the grid leaves no SM room it could pack into)
  unsigned long long* split_flags;  // split-K over flagged slots (epilogue/epilogue.cuh: finish_flagged): per
                                   // tile, kFlaggedMaxSplits - 1 slots of tile_m x tile_n words, zero between
                                   // launches; null: the last arrival sums (runtime/gemm.cpp: flagged_split_k)
  unsigned long long* trace;  // developers: the per-block trace of kernels built with -DLUTMM_TIMELINE=3
                              // (ptx/timeline.cuh; runtime/trace.hpp), else null
};

}  // namespace lutmm
