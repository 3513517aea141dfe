#pragma once
// The library's one work-sharing loop (quantizer, CPU GEMMs, packer, benchmark inputs): `threads`
// std::threads pull item indices from one atomic counter, so uneven items (edge blocks) balance
// themselves. The first exception a worker throws is rethrown on the calling thread after every worker
// has stopped. Callers that need results independent of the thread count split the work into items that
// depend only on the problem and reduce per-item results in item order.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace lutmm::detail {

// threads <= 0 means every hardware thread.
inline int resolve_threads(int threads) {
  if (threads > 0) return threads;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

// Calls fn(worker, item) for every item in [0, count); worker in [0, workers) identifies the calling
// thread so it can own scratch memory. Returns the number of workers used (<= threads, <= count).
template <typename Fn>
int parallel_for(int64_t count, int threads, Fn&& fn) {
  if (count <= 0) return 0;
  const int workers = static_cast<int>(std::min<int64_t>(resolve_threads(threads), count));
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto body = [&](int worker) {
    try {
      for (int64_t item = next.fetch_add(1); item < count && !failed.load(std::memory_order_relaxed);
           item = next.fetch_add(1)) {
        fn(worker, item);
      }
    } catch (...) {
      std::lock_guard lock(error_mutex);
      if (!error) error = std::current_exception();
      failed = true;
    }
  };
  if (workers == 1) {
    body(0);
  } else {
    std::vector<std::thread> pool;
    pool.reserve(workers - 1);
    try {
      for (int w = 1; w < workers; ++w) pool.emplace_back(body, w);
    } catch (...) {
      // Could not start every thread: the ones running still finish all items with the caller's help.
    }
    body(0);
    for (auto& t : pool) t.join();
  }
  if (error) std::rethrow_exception(error);
  return workers;
}

}  // namespace lutmm::detail
