#pragma once
// Where a block's time goes, for developers: compiled in only with -DLUTMM_TIMELINE=1 (through
// LUTMM_NVRTC_OPTIONS, which also enters the cubin cache key); otherwise every call below is empty and the
// kernels' SASS is unchanged.
//
// Thread 0 of the first and of the last block of the grid (in launch order: (0,0,0) and the last split of
// the last tile; with -DLUTMM_TIMELINE=2 of every block, for one launch such as `lutmm verify`'s) reads the SM
// clock at each mark and prints one line when the block ends:
//   TL <kernel tag> blk <x> <y> <z> sm <id> gt <globaltimer at entry> <at exit> cyc <mark1 - mark0> ...
// globaltimer is in ns, shared by all SMs (consecutive launches' gaps); the clock deltas are in SM cycles.
// scripts/timeline.py summarises a run's lines.
// The printf costs tens of us a launch where many launches run back to back (the benchmark's graphs: the next
// launch waits for it), so the boundary between launches needs -DLUTMM_TIMELINE=3: no printf; thread 0 of every
// block takes a record slot at entry (one relaxed atomic add, waited for only at exit) and at exit writes its
// record into the trace buffer that the runtime passes as GemmParams::trace (runtime/trace.hpp; `lutmm bench
// --trace FILE`), laid out as kernels/gemm_params.cuh's TraceWord says.
#include "lutmm/common.cuh"
#include "lutmm/kernels/gemm_params.cuh"  // (the trace buffer's layout)

#ifndef LUTMM_TIMELINE
#define LUTMM_TIMELINE 0
#endif

#if LUTMM_TIMELINE && LUTMM_TIMELINE < 3
extern "C" __device__ int vprintf(const char*, const char*);
#endif

namespace lutmm::ptx {

struct Timeline {
  static constexpr int kMarks = 6;  // entry, dependency met, first tile ready, main loop done, tile staged, exit
#if LUTMM_TIMELINE
  long long clock[kMarks];
  unsigned long long entry_ns, wait_ns = 0;
  long long before_wait[2] = {0, 0};  // (trace only: the prologue's W copies issued, its table built)
  long long first_item[3] = {0, 0, 0};  // (trace only: the first item's main loop end, tile staged, epilogue done)
  unsigned items = 0;
  unsigned long long* trace;
  unsigned long long slot = kTraceCapacity;
  bool on;
  LUTMM_DEVICE explicit Timeline(unsigned long long* trace_buffer) : trace(trace_buffer) {
    const bool first = blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0;
    const bool last = blockIdx.x == gridDim.x - 1 && blockIdx.y == gridDim.y - 1 && blockIdx.z == gridDim.z - 1;
    on = threadIdx.x == 0 && (LUTMM_TIMELINE >= 2 || first || last);
    for (int i = 0; i < kMarks; ++i) clock[i] = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(entry_ns));
    clock[0] = clock64();
    if (LUTMM_TIMELINE >= 3 && on && trace != nullptr)
      asm volatile("atom.add.relaxed.gpu.global.u64 %0, [%1], 1;" : "=l"(slot) : "l"(trace));
  }
  LUTMM_DEVICE void mark(int i) {
    if (!on) return;
    clock[i] = clock64();
    if (i == 1) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(wait_ns));
  }
  // Two points of the prologue before the dependency wait (recorded in the trace only).
  LUTMM_DEVICE void mark_before_wait(int j) {
    if (on) before_wait[j] = clock64();
  }
  LUTMM_DEVICE void print(int tag) {
    if (!on) return;
    clock[kMarks - 1] = clock64();
    if (items++ == 0) first_item[0] = clock[3], first_item[1] = clock[4], first_item[2] = clock[kMarks - 1];
    unsigned long long exit_ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(exit_ns));
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
#if LUTMM_TIMELINE >= 3
    if (trace == nullptr || slot >= kTraceCapacity) return;
    unsigned long long* r = trace + kTraceHeaderWords + slot * kTraceRecordWords;
    r[kTraceEntryNs] = entry_ns, r[kTraceDependencyNs] = wait_ns, r[kTraceExitNs] = exit_ns;
    r[kTraceTag] = static_cast<unsigned long long>(tag), r[kTraceSm] = sm;
    r[kTraceBlockX] = blockIdx.x, r[kTraceBlockY] = blockIdx.y, r[kTraceBlockZ] = blockIdx.z;
    for (int i = 1; i < kMarks; ++i)
      r[kTraceMarkCycles + i - 1] = clock[i] > 0 ? static_cast<unsigned long long>(clock[i] - clock[0]) : ~0ull;
    r[kTraceGridBlocks] = static_cast<unsigned long long>(gridDim.x) * gridDim.y * gridDim.z;
    for (int j = 0; j < 2; ++j)
      r[kTraceBeforeWaitCycles + j] = before_wait[j] > 0 ? static_cast<unsigned long long>(before_wait[j] - clock[0]) : ~0ull;
    r[kTraceItems] = items;
    for (int j = 0; j < 3; ++j)
      r[kTraceFirstItemCycles + j] =
          items > 1 && first_item[j] > 0 ? static_cast<unsigned long long>(first_item[j] - clock[0]) : ~0ull;
#else
    struct {
      int tag, x, y, z;
      unsigned sm;
      unsigned long long entry, exit;
      long long d[kMarks - 1];
    } args{tag, static_cast<int>(blockIdx.x), static_cast<int>(blockIdx.y), static_cast<int>(blockIdx.z), sm,
           entry_ns, exit_ns, {}};
    for (int i = 1; i < kMarks; ++i) args.d[i - 1] = clock[i] > 0 ? clock[i] - clock[0] : -1;
    vprintf("TL %d blk %d %d %d sm %u gt %llu %llu cyc %lld %lld %lld %lld %lld\n",
            reinterpret_cast<const char*>(&args));
#endif
  }
#else
  LUTMM_DEVICE explicit Timeline(unsigned long long*) {}
  LUTMM_DEVICE void mark(int) {}
  LUTMM_DEVICE void mark_before_wait(int) {}
  LUTMM_DEVICE void print(int) {}
#endif
};

}  // namespace lutmm::ptx
