#include "runtime/trace.hpp"

#include <algorithm>
#include <atomic>
#include <fstream>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#include "lutmm/error.hpp"
#include "lutmm/kernels/gemm_params.cuh"
#include "runtime/cuda_check.hpp"

namespace lutmm::trace {
namespace {

constexpr size_t kWords = kTraceHeaderWords + kTraceCapacity * kTraceRecordWords;

std::atomic<unsigned long long*> g_buffer{nullptr};
std::mutex g_mutex;

}  // namespace

void start() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_buffer.load() != nullptr) return;
  void* p = nullptr;
  check_cuda(cudaMalloc(&p, kWords * sizeof(unsigned long long)), "cudaMalloc (trace buffer)");
  check_cuda(cudaMemset(p, 0, kWords * sizeof(unsigned long long)), "cudaMemset (trace buffer)");
  check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize (trace buffer)");
  g_buffer.store(static_cast<unsigned long long*>(p));
}

unsigned long long* buffer() { return g_buffer.load(std::memory_order_relaxed); }

size_t write_csv(const std::string& path, size_t* dropped) {
  std::lock_guard<std::mutex> lock(g_mutex);
  unsigned long long* const device = g_buffer.load();
  if (device == nullptr) throw_argument_error("trace", "tracing started (trace::start)", "not started");
  check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize (trace)");
  unsigned long long count = 0;
  check_cuda(cudaMemcpy(&count, device, sizeof(count), cudaMemcpyDeviceToHost), "cudaMemcpy (trace count)");
  const size_t kept = static_cast<size_t>(std::min<unsigned long long>(count, kTraceCapacity));
  std::vector<unsigned long long> words(kept * kTraceRecordWords);
  if (kept > 0) {
    check_cuda(cudaMemcpy(words.data(), device + kTraceHeaderWords, words.size() * sizeof(unsigned long long),
                          cudaMemcpyDeviceToHost),
               "cudaMemcpy (trace records)");
  }
  check_cuda(cudaMemset(device, 0, kWords * sizeof(unsigned long long)), "cudaMemset (trace buffer)");
  check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize (trace)");
  // A slot is taken at entry and written at exit: one whose block never wrote it (none, after a synchronize) has
  // an entry time of 0 and is left out.
  std::vector<const unsigned long long*> records;
  for (size_t i = 0; i < kept; ++i)
    if (words[i * kTraceRecordWords + kTraceEntryNs] != 0) records.push_back(&words[i * kTraceRecordWords]);
  std::sort(records.begin(), records.end(), [](auto* a, auto* b) { return a[kTraceEntryNs] < b[kTraceEntryNs]; });
  std::ofstream out(path);
  if (!out) throw_argument_error("path", "a file the trace can be written to", path);
  out << "tag,sm,block_x,block_y,block_z,entry_ns,dependency_ns,exit_ns,cyc_dependency,cyc_first_tile,"
         "cyc_main_loop,cyc_staged,cyc_exit,grid_blocks,cyc_prologue_copies,cyc_prologue_table,items,"
         "cyc_first_item_main_loop,cyc_first_item_staged,cyc_first_item_done\n";
  auto cycles = [](unsigned long long c) { return c == ~0ull ? std::string("-1") : std::to_string(c); };
  for (const unsigned long long* r : records) {
    const unsigned long long* mark = r + kTraceMarkCycles;  // marks 1..5
    out << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", r[kTraceTag], r[kTraceSm],
                       r[kTraceBlockX], r[kTraceBlockY], r[kTraceBlockZ], r[kTraceEntryNs], r[kTraceDependencyNs],
                       r[kTraceExitNs], cycles(mark[0]), cycles(mark[1]), cycles(mark[2]), cycles(mark[3]),
                       cycles(mark[4]), r[kTraceGridBlocks], cycles(r[kTraceBeforeWaitCycles]),
                       cycles(r[kTraceBeforeWaitCycles + 1]),
                       r[kTraceItems], cycles(r[kTraceFirstItemCycles]), cycles(r[kTraceFirstItemCycles + 1]),
                       cycles(r[kTraceFirstItemCycles + 2]));
  }
  out.close();
  if (!out) throw_argument_error("path", "a file the trace can be written to", path + " (write failed)");
  if (dropped != nullptr) *dropped = static_cast<size_t>(count) - kept;
  return records.size();
}

}  // namespace lutmm::trace
