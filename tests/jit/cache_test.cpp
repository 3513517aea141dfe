// The cubin cache: keys, the memory cache, the disk format, corruption, and concurrent writers (threads and
// processes). Every test gets its own LUTMM_CACHE_DIR and an empty memory cache.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <set>
#include <thread>

#include "jit/disk_cache.hpp"
#include "jit/hash.hpp"
#include "jit/jit_test_util.hpp"
#include "lutmm/error.hpp"

namespace lutmm::jit {
namespace {

namespace fs = std::filesystem;
using testing::CacheTest;
using testing::scale_request;
using testing::ScopedEnv;
using testing::TempDir;

std::vector<char> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const fs::path& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::vector<std::string> temp_files(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& entry : fs::directory_iterator(dir / "kernels"))
    if (entry.path().filename().string().find(".tmp.") != std::string::npos) out.push_back(entry.path().string());
  return out;
}

CompiledKernel fake_kernel(size_t payload_bytes) {
  CompiledKernel k;
  k.cubin.resize(payload_bytes);
  for (size_t i = 0; i < payload_bytes; ++i) k.cubin[i] = static_cast<char>(i * 131 + 7);
  k.log =
      "ptxas info    : Compiling entry function 'kern' for 'sm_80'\n"
      "ptxas info    : Function properties for kern\n"
      "ptxas         .     16 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Used 42 registers, used 0 barriers\n";
  k.target = "sm_80";
  return k;
}

const std::string kKey = "0123456789abcdef0123456789abcdef";

TEST(Hash, KnownPropertiesOfTheDigest) {
  const std::string a = Hasher128().field("abc").digest().hex();
  EXPECT_EQ(a.size(), 32u);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(a, Hasher128().field("abc").digest().hex());  // deterministic
  // Fields are length-prefixed, so shifting a boundary changes the digest.
  EXPECT_NE(Hasher128().field("ab").field("c").digest(), Hasher128().field("a").field("bc").digest());
  // Streaming in pieces equals hashing at once.
  const std::string text = "the quick brown fox jumps over the lazy dog";
  Hasher128 pieces;
  for (char c : text) pieces.bytes(&c, 1);
  EXPECT_EQ(pieces.digest(), Hasher128().bytes(text.data(), text.size()).digest());
  // Every single-bit change of a 64-byte input changes both halves.
  std::string base(64, 'x');
  const Digest128 ref = Hasher128().bytes(base.data(), base.size()).digest();
  for (size_t i = 0; i < base.size() * 8; ++i) {
    std::string flipped = base;
    flipped[i / 8] = static_cast<char>(flipped[i / 8] ^ (1 << (i % 8)));
    const Digest128 d = Hasher128().bytes(flipped.data(), flipped.size()).digest();
    EXPECT_NE(d.hi, ref.hi) << "bit " << i;
    EXPECT_NE(d.lo, ref.lo) << "bit " << i;
  }
}

TEST(CacheKey, ChangesWithEveryInput) {
  const CompileRequest base = scale_request(80);
  const std::string key = cache_key(base);
  EXPECT_EQ(key.size(), 32u);
  EXPECT_EQ(key.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(key, cache_key(base));

  std::set<std::string> keys = {key};
  auto add = [&](const CompileRequest& r, const char* what) { EXPECT_TRUE(keys.insert(cache_key(r)).second) << what; };
  CompileRequest r = base;
  r.source += " ";
  add(r, "source");
  r = base;
  r.arch = 86;
  add(r, "arch");
  r = base;
  r.arch = 90;
  add(r, "arch 90");
  r.arch_specific = true;
  add(r, "arch_specific");
  r = base;
  r.kernel_name = "other_name";
  add(r, "kernel_name");
  r = base;
  r.extra_options = {"-DA=1"};
  add(r, "option");
  r.extra_options = {"-DA=1", "-DB=2"};
  add(r, "second option");
  r.extra_options = {"-DB=2", "-DA=1"};
  add(r, "option order");
  r.extra_options = {"-DA=1-DB=2"};
  add(r, "option boundary");
}

TEST_F(CacheTest, MemoryCacheHit) {
  const CompileRequest r = scale_request(80, "memory");
  const CompiledKernel first = compile_cached(r);
  EXPECT_FALSE(first.from_memory_cache);
  EXPECT_FALSE(first.from_disk_cache);
  EXPECT_GT(first.compile_ms, 0.0);
  const CompiledKernel second = compile_cached(r);
  EXPECT_TRUE(second.from_memory_cache);
  EXPECT_FALSE(second.from_disk_cache);
  EXPECT_EQ(second.compile_ms, 0.0);
  EXPECT_EQ(second.cubin, first.cubin);
  EXPECT_EQ(second.resources.registers, first.resources.registers);
}

TEST_F(CacheTest, DiskRoundTrip) {
  const CompileRequest r = scale_request(80, "disk");
  const CompiledKernel built = compile_cached(r);
  const fs::path file = disk::file_for(dir_.path(), cache_key(r));
  ASSERT_TRUE(fs::exists(file));
  EXPECT_TRUE(temp_files(dir_.path()).empty());
  clear_memory_cache();
  const CompiledKernel loaded = compile_cached(r);
  EXPECT_TRUE(loaded.from_disk_cache);
  EXPECT_FALSE(loaded.from_memory_cache);
  EXPECT_EQ(loaded.compile_ms, 0.0);
  EXPECT_EQ(loaded.cubin, built.cubin);
  EXPECT_EQ(loaded.log, built.log);
  EXPECT_EQ(loaded.target, "sm_80");
  EXPECT_FALSE(loaded.is_ptx);
  // Resources come back from the stored ptxas log.
  EXPECT_GT(loaded.resources.registers, 0);
  EXPECT_EQ(loaded.resources.registers, built.resources.registers);
  EXPECT_EQ(loaded.resources.spill_store_bytes, built.resources.spill_store_bytes);
  EXPECT_EQ(loaded.resources.stack_frame_bytes, built.resources.stack_frame_bytes);
  // Now it is in memory again.
  EXPECT_TRUE(compile_cached(r).from_memory_cache);
}

TEST_F(CacheTest, PtxRoundTrip) {
  const int newest = nvrtc_supported_archs().back();
  const CompileRequest r = scale_request((newest / 10 + 1) * 10, "ptx");
  const CompiledKernel built = compile_cached(r);
  ASSERT_TRUE(built.is_ptx);
  clear_memory_cache();
  const CompiledKernel loaded = compile_cached(r);
  EXPECT_TRUE(loaded.from_disk_cache);
  EXPECT_TRUE(loaded.is_ptx);
  EXPECT_EQ(loaded.target, built.target);
  EXPECT_EQ(loaded.cubin, built.cubin);
}

TEST(DiskFormat, EncodeDecodeAndEveryCorruption) {
  const CompiledKernel k = fake_kernel(300);
  const std::vector<char> file = disk::encode(kKey, k);
  const auto back = disk::decode(kKey, file, "kern");
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->cubin, k.cubin);
  EXPECT_EQ(back->log, k.log);
  EXPECT_EQ(back->target, "sm_80");
  EXPECT_EQ(back->resources.registers, 42);
  EXPECT_EQ(back->resources.stack_frame_bytes, 16);
  EXPECT_EQ(back->resources.spill_store_bytes, 4);
  // Truncated anywhere, extended, any one byte changed, or read under another key: refused.
  for (size_t n = 0; n < file.size(); ++n)
    EXPECT_FALSE(disk::decode(kKey, std::vector<char>(file.begin(), file.begin() + n), "kern")) << n;
  std::vector<char> longer = file;
  longer.push_back(0);
  EXPECT_FALSE(disk::decode(kKey, longer, "kern"));
  for (size_t i = 0; i < file.size(); ++i) {
    std::vector<char> bad = file;
    bad[i] = static_cast<char>(bad[i] ^ 0x10);
    EXPECT_FALSE(disk::decode(kKey, bad, "kern")) << "byte " << i;
  }
  EXPECT_FALSE(disk::decode("f123456789abcdef0123456789abcdef", file, "kern"));
  EXPECT_THROW(disk::encode("not-a-key", k), Error);
}

// A file damaged in each way is noticed, deleted and replaced by a good one; the kernel is compiled again.
TEST_F(CacheTest, CorruptFileIsRebuilt) {
  const CompileRequest r = scale_request(80, "corrupt");
  const CompiledKernel good = compile_cached(r);
  const fs::path file = disk::file_for(dir_.path(), cache_key(r));
  const std::vector<char> bytes = read_file(file);
  ASSERT_GT(bytes.size(), 200u);
  std::vector<std::vector<char>> damaged = {
      {},                                                                  // empty
      std::vector<char>(bytes.begin(), bytes.begin() + 40),                // cut inside the header
      std::vector<char>(bytes.begin(), bytes.begin() + bytes.size() / 2),  // cut inside the payload
      std::vector<char>(10, 'x'),                                          // not ours at all
  };
  std::vector<char> flipped = bytes;
  flipped[bytes.size() / 2] = static_cast<char>(flipped[bytes.size() / 2] ^ 1);  // one bit in the payload
  damaged.push_back(flipped);
  for (size_t i = 0; i < damaged.size(); ++i) {
    write_file(file, damaged[i]);
    clear_memory_cache();
    const CompiledKernel again = compile_cached(r);
    EXPECT_FALSE(again.from_disk_cache) << i;
    EXPECT_GT(again.compile_ms, 0.0) << i;
    EXPECT_EQ(again.cubin, good.cubin) << i;
    // Rewritten whole (not byte-equal to the first: the ptxas log carries compile times).
    const disk::LoadResult rewritten = disk::load(dir_.path(), cache_key(r), r.kernel_name);
    ASSERT_EQ(rewritten.status, disk::LoadStatus::hit) << "case " << i << ": the file was not rewritten";
    EXPECT_EQ(rewritten.kernel->cubin, good.cubin) << i;
    clear_memory_cache();
    EXPECT_TRUE(compile_cached(r).from_disk_cache) << i;
  }
}

// Threads hammering one key: a reader sees a whole file or none, never a partial one.
TEST(DiskCacheConcurrency, ThreadsWritingOneKey) {
  TempDir dir;
  const CompiledKernel k = fake_kernel(1 << 20);
  std::atomic<bool> stop{false};
  std::atomic<int> corrupt{0}, hits{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t)
    readers.emplace_back([&] {
      while (!stop.load()) {
        const disk::LoadResult r = disk::load(dir.path(), kKey, "kern");
        if (r.status == disk::LoadStatus::corrupt) ++corrupt;
        if (r.status == disk::LoadStatus::hit) ++hits;
      }
    });
  std::vector<std::thread> writers;
  for (int t = 0; t < 6; ++t)
    writers.emplace_back([&] {
      for (int i = 0; i < 10; ++i) disk::store(dir.path(), kKey, k);
    });
  for (auto& w : writers) w.join();
  stop = true;
  for (auto& r : readers) r.join();
  EXPECT_EQ(corrupt.load(), 0);
  EXPECT_GT(hits.load(), 0);
  const disk::LoadResult last = disk::load(dir.path(), kKey, "kern");
  ASSERT_EQ(last.status, disk::LoadStatus::hit);
  EXPECT_EQ(last.kernel->cubin, k.cubin);
  EXPECT_TRUE(temp_files(dir.path()).empty());
}

// Two processes compiling and writing the same key at the same time both succeed and leave a valid file.
TEST_F(CacheTest, TwoProcessesWritingOneKey) {
  const CompileRequest r = scale_request(80, "two processes");
  const std::string key = cache_key(r);
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  pid_t children[2];
  for (pid_t& child : children) {
    child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      close(go[1]);
      char byte;
      if (read(go[0], &byte, 1) != 1) _exit(3);  // both start when the parent closes the pipe
      try {
        // Usually both compile and write; a child scheduled late may find the other's file, which is fine.
        _exit(compile_cached(r).cubin.empty() ? 2 : 0);
      } catch (...) {
        _exit(1);
      }
    }
  }
  close(go[0]);
  const char start[2] = {1, 1};
  ASSERT_EQ(write(go[1], start, 2), 2);
  close(go[1]);
  for (pid_t child : children) {
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  const disk::LoadResult stored = disk::load(dir_.path(), key, r.kernel_name);
  ASSERT_EQ(stored.status, disk::LoadStatus::hit);
  EXPECT_EQ(stored.kernel->cubin, compile(r).cubin);
  EXPECT_TRUE(temp_files(dir_.path()).empty());
}

// Threads asking for one kernel at once: one compiles, the others wait for it and share its result.
TEST_F(CacheTest, ConcurrentRequestsCompileOnce) {
  const CompileRequest r = scale_request(80, "dedupe");
  constexpr int kThreads = 8;
  std::vector<CompiledKernel> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back([&, t] { results[t] = compile_cached(r); });
  for (auto& t : threads) t.join();
  int compiled = 0;
  for (const CompiledKernel& k : results) {
    compiled += k.from_memory_cache ? 0 : 1;
    EXPECT_FALSE(k.from_disk_cache);
    EXPECT_EQ(k.cubin, results[0].cubin);
  }
  EXPECT_EQ(compiled, 1);
}

// Different kernels from several threads at once: all built, each with its own cubin.
TEST_F(CacheTest, ConcurrentDifferentKernels) {
  constexpr int kThreads = 4;
  std::vector<CompiledKernel> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      CompileRequest r = scale_request(80);
      r.source += "extern \"C\" __global__ void extra_" + std::to_string(t) + "(int* p) { p[0] = " + std::to_string(t) +
                  "; }\n";
      results[t] = compile_cached(r);
    });
  for (auto& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_FALSE(results[t].from_memory_cache);
    for (int u = 0; u < t; ++u) EXPECT_NE(results[t].cubin, results[u].cubin);
  }
}

TEST_F(CacheTest, FailedCompileIsNotCachedAndRethrows) {
  CompileRequest r = scale_request(80);
  r.source = "extern \"C\" __global__ void lutmm_test_scale(float* p) { p[0] = nope; }\n";
  EXPECT_THROW(compile_cached(r), Error);
  EXPECT_THROW(compile_cached(r), Error);  // not remembered as in flight or done
  EXPECT_TRUE(fs::is_empty(dir_.path() / "kernels"));
}

TEST(CacheDirectory, FromEnvironment) {
  TempDir dir;
  {
    ScopedEnv env("LUTMM_CACHE_DIR", (dir.path() / "custom").string());
    EXPECT_EQ(cache_directory(), (dir.path() / "custom").string());
    EXPECT_TRUE(fs::is_directory(dir.path() / "custom" / "kernels"));
  }
  {
    ScopedEnv env("LUTMM_CACHE_DIR", std::nullopt);
    ScopedEnv home("HOME", (dir.path() / "home").string());
    EXPECT_EQ(cache_directory(), (dir.path() / "home" / ".cache" / "lutmm").string());
    EXPECT_TRUE(fs::is_directory(dir.path() / "home" / ".cache" / "lutmm" / "kernels"));
  }
  {
    ScopedEnv env("LUTMM_CACHE_DIR", std::nullopt);
    ScopedEnv home("HOME", std::nullopt);
    EXPECT_EQ(cache_directory(), "/tmp/lutmm-cache-" + std::to_string(getuid()));
  }
}

// A cache folder that cannot exist (under a plain file): cache_directory throws, compiling still works.
TEST(CacheDirectory, UnusableDirectoryFallsBackToMemory) {
  TempDir dir;
  write_file(dir.path() / "plain_file", {'x'});
  ScopedEnv env("LUTMM_CACHE_DIR", (dir.path() / "plain_file" / "cache").string());
  clear_memory_cache();
  try {
    cache_directory();
    ADD_FAILURE() << "no Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("plain_file"), std::string::npos) << e.what();
  }
  const CompiledKernel k = compile_cached(scale_request(80, "no disk"));
  EXPECT_FALSE(k.cubin.empty());
  EXPECT_TRUE(compile_cached(scale_request(80, "no disk")).from_memory_cache);
  clear_memory_cache();
}

}  // namespace
}  // namespace lutmm::jit
