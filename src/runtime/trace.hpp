#pragma once
// Developers: the per-block trace of kernels built with -DLUTMM_TIMELINE=3 (device/lutmm/ptx/timeline.cuh), for
// where the time goes between back-to-back launches, which the printf of LUTMM_TIMELINE=1 distorts. Once
// started, every GEMM launch passes one device buffer (GemmParams::trace) in which such kernels' blocks record
// their entry, dependency wait, phases and exit; `lutmm bench --trace FILE` starts it and writes the CSV that
// `scripts/timeline.py --trace FILE` reads. Kernels built without the option ignore the buffer.
#include <cstddef>
#include <string>

namespace lutmm::trace {

// Allocates the buffer (32 MB, zeroed) on the current device on the first call; later calls do nothing.
// One buffer for the process: kernels built with the option must then run on that device (another device's
// blocks could not write it). Throws Error on a CUDA failure.
void start();
// The buffer launches pass: null until start().
unsigned long long* buffer();
// Writes the records so far as CSV (one line a block, sorted by entry time: tag, sm, block, globaltimer ns of
// entry, dependency met and exit, SM cycles from entry to each mark, blocks of its grid, SM cycles from entry to
// the prologue's W copies issued and its table built, -1 where a kernel has no such mark) and clears the buffer.
// Returns how many records it wrote (the rest, past the buffer's capacity, are counted in `dropped`). Throws
// Error if tracing was not started, on a CUDA failure or if the file cannot be written.
size_t write_csv(const std::string& path, size_t* dropped = nullptr);

}  // namespace lutmm::trace
