// compile_cached: memory, then disk, then NVRTC; identical requests in flight at once compile once.
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>

#include "jit/disk_cache.hpp"
#include "jit/internal.hpp"
#include "lutmm/error.hpp"

namespace lutmm::jit {

namespace {

using Shared = std::shared_ptr<const CompiledKernel>;

struct MemoryCache {
  std::mutex mutex;
  std::map<std::string, Shared> done;                        // by cache key
  std::map<std::string, std::shared_future<Shared>> flying;  // being built by some thread now
};

MemoryCache& memory() {
  static MemoryCache cache;
  return cache;
}

// What the calling thread gets for a kernel someone (itself included) built earlier.
CompiledKernel from_memory(const Shared& kernel) {
  CompiledKernel out = *kernel;
  out.compile_ms = 0;
  out.from_disk_cache = false;
  out.from_memory_cache = true;
  return out;
}

// An Error's text for a warning line, which has its own "lutmm: " prefix.
std::string reason(const Error& e) {
  std::string_view text = e.what();
  if (text.starts_with("lutmm: ")) text.remove_prefix(7);
  return std::string(text);
}

// The disk cache directory, or nothing (and one warning) when it cannot be used: caching is best effort.
std::optional<std::filesystem::path> usable_cache_directory() {
  try {
    return std::filesystem::path(cache_directory());
  } catch (const Error& e) {
    detail::warn_once("cache-dir", reason(e) + "; kernels are cached in memory only");
    return std::nullopt;
  }
}

CompiledKernel build(const CompileRequest& r, const std::string& key) {
  const auto dir = usable_cache_directory();
  if (dir) {
    disk::LoadResult loaded = disk::load(*dir, key, r.kernel_name);
    if (loaded.status == disk::LoadStatus::hit) return std::move(*loaded.kernel);
    if (loaded.status == disk::LoadStatus::corrupt) {
      const auto path = disk::file_for(*dir, key);
      detail::warn_once("cache-corrupt", "corrupt kernel cache file '" + path.string() + "' deleted and rebuilt");
      std::error_code ignored;
      std::filesystem::remove(path, ignored);
    }
  }
  CompiledKernel kernel = compile(r);
  if (dir) {
    try {
      disk::store(*dir, key, kernel);
    } catch (const Error& e) {
      detail::warn_once("cache-write", reason(e) + "; kernels are cached in memory only");
    }
  }
  return kernel;
}

}  // namespace

CompiledKernel compile_cached(const CompileRequest& r) {
  const std::string key = cache_key(r);  // validates r
  MemoryCache& cache = memory();
  std::promise<Shared> promise;
  {
    std::unique_lock lock(cache.mutex);
    if (auto it = cache.done.find(key); it != cache.done.end()) return from_memory(it->second);
    if (auto it = cache.flying.find(key); it != cache.flying.end()) {
      std::shared_future<Shared> pending = it->second;
      lock.unlock();
      return from_memory(pending.get());  // rethrows the builder's Error
    }
    cache.flying.emplace(key, promise.get_future().share());
  }
  // Built outside the lock: other kernels compile in parallel, only this key's requests wait.
  try {
    auto kernel = std::make_shared<const CompiledKernel>(build(r, key));
    {
      std::lock_guard lock(cache.mutex);
      cache.done.emplace(key, kernel);
      cache.flying.erase(key);
    }
    promise.set_value(kernel);
    return *kernel;
  } catch (...) {
    {
      std::lock_guard lock(cache.mutex);
      cache.flying.erase(key);
    }
    promise.set_exception(std::current_exception());
    throw;
  }
}

void clear_memory_cache() {
  MemoryCache& cache = memory();
  std::lock_guard lock(cache.mutex);
  cache.done.clear();
}

}  // namespace lutmm::jit
