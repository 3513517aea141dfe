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
    if (words[i * kTraceRecordWords] != 0) records.push_back(&words[i * kTraceRecordWords]);
  std::sort(records.begin(), records.end(), [](auto* a, auto* b) { return a[0] < b[0]; });
  std::ofstream out(path);
  if (!out) throw_argument_error("path", "a file the trace can be written to", path);
  out << "tag,sm,block_x,block_y,block_z,entry_ns,dependency_ns,exit_ns,cyc_dependency,cyc_first_tile,"
         "cyc_main_loop,cyc_staged,cyc_exit,grid_blocks,cyc_prologue_copies,cyc_prologue_table\n";
  auto cycles = [](unsigned long long c) { return c == ~0ull ? std::string("-1") : std::to_string(c); };
  for (const unsigned long long* r : records) {
    out << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", r[3], r[4], r[5], r[6], r[7], r[0], r[1],
                       r[2], cycles(r[8]), cycles(r[9]), cycles(r[10]), cycles(r[11]), cycles(r[12]), r[13],
                       cycles(r[14]), cycles(r[15]));
  }
  out.close();
  if (!out) throw_argument_error("path", "a file the trace can be written to", path + " (write failed)");
  if (dropped != nullptr) *dropped = static_cast<size_t>(count) - kept;
  return records.size();
}

}  // namespace lutmm::trace
