#pragma once
// Helpers shared by the format module's sources; not part of the public API.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

namespace lutmm::detail {

// Validates table values (4, 8 or 16 finite values, not all zero) and returns their bit width.
// Errors name `argument`, the name the caller's user knows the values by.
int check_table_values(const std::vector<float>& values, std::string_view argument);

// 0 -> every hardware thread; negative is the caller's error to report.
inline int resolve_threads(int threads) {
  if (threads > 0) return threads;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

// Runs fn(chunk) for chunk in [0, chunks) on up to `threads` threads (the caller included), handing
// chunks out dynamically. Work is split into chunks that depend only on the problem, never on the
// thread count, so that a per-chunk result reduced in chunk order is the same for any `threads`.
// The first exception thrown by fn is rethrown here after every thread has stopped.
template <class Fn>
void parallel_chunks(int64_t chunks, int threads, Fn&& fn) {
  const int64_t workers = std::max<int64_t>(1, std::min<int64_t>(threads, chunks));
  if (workers == 1) {
    for (int64_t c = 0; c < chunks; ++c) fn(c);
    return;
  }
  std::atomic<int64_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto work = [&] {
    try {
      for (int64_t c = next.fetch_add(1); c < chunks; c = next.fetch_add(1)) fn(c);
    } catch (...) {
      std::lock_guard lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      next.store(chunks);
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(workers - 1));
  for (int64_t t = 1; t < workers; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace lutmm::detail
