#include "jit/disk_cache.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <thread>

#include "jit/internal.hpp"
#include "lutmm/error.hpp"

namespace lutmm::jit {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'L', 'U', 'T', 'M', 'M', 'J', 'I', 'T'};
constexpr size_t kKeyBytes = 32;
constexpr size_t kChecksumOffset = 72;
constexpr size_t kHeaderBytes = 88;
constexpr uint32_t kFlagPtx = 1;

void put(std::vector<char>& out, size_t offset, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out[offset + i] = static_cast<char>((value >> (8 * i)) & 0xff);
}

uint64_t get(const std::vector<char>& in, size_t offset, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value |= static_cast<uint64_t>(static_cast<unsigned char>(in[offset + i])) << (8 * i);
  return value;
}

Digest128 checksum(const std::vector<char>& file) {
  Hasher128 h;
  h.bytes(file.data(), kChecksumOffset);
  h.bytes(file.data() + kHeaderBytes, file.size() - kHeaderBytes);
  return h.digest();
}

void check_key(const std::string& key) {
  const bool hex = key.size() == kKeyBytes && key.find_first_not_of("0123456789abcdef") == std::string::npos;
  if (!hex) throw_argument_error("key", "32 lowercase hex digits (a cache_key)", "'" + key + "'");
}

// Unique within the machine: pid, a hash of the thread id, and a per-process counter.
std::string temp_name(const std::string& key) {
  static std::atomic<uint64_t> counter{0};
  return key + ".tmp." + std::to_string(::getpid()) + "." +
         std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id())) + "." +
         std::to_string(counter.fetch_add(1));
}

}  // namespace

std::string cache_directory() {
  fs::path dir;
  if (const char* env = std::getenv("LUTMM_CACHE_DIR"); env != nullptr && *env != '\0') {
    dir = env;
  } else if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    dir = fs::path(home) / ".cache" / "lutmm";
  } else {
    dir = fs::path("/tmp") / ("lutmm-cache-" + std::to_string(::getuid()));
  }
  std::error_code ec;
  fs::create_directories(dir / "kernels", ec);
  if (ec) throw_error("cannot create the kernel cache directory '" + (dir / "kernels").string() + "': " + ec.message());
  return dir.string();
}

namespace disk {

fs::path file_for(const fs::path& dir, const std::string& key) { return dir / "kernels" / (key + ".cubin"); }

std::vector<char> encode(const std::string& key, const CompiledKernel& kernel) {
  check_key(key);
  std::vector<char> file(kHeaderBytes + kernel.cubin.size() + kernel.log.size() + kernel.target.size());
  std::memcpy(file.data(), kMagic, sizeof kMagic);
  put(file, 8, detail::kCacheFormatVersion, 4);
  put(file, 12, kernel.is_ptx ? kFlagPtx : 0, 4);
  std::memcpy(file.data() + 16, key.data(), kKeyBytes);
  put(file, 48, kernel.cubin.size(), 8);
  put(file, 56, kernel.log.size(), 8);
  put(file, 64, kernel.target.size(), 8);
  char* body = file.data() + kHeaderBytes;
  std::copy(kernel.cubin.begin(), kernel.cubin.end(), body);
  body += kernel.cubin.size();
  std::copy(kernel.log.begin(), kernel.log.end(), body);
  body += kernel.log.size();
  std::copy(kernel.target.begin(), kernel.target.end(), body);
  const Digest128 sum = checksum(file);
  put(file, kChecksumOffset, sum.hi, 8);
  put(file, kChecksumOffset + 8, sum.lo, 8);
  return file;
}

std::optional<CompiledKernel> decode(const std::string& key, const std::vector<char>& file,
                                     const std::string& kernel_name) {
  check_key(key);
  if (file.size() < kHeaderBytes) return std::nullopt;
  if (std::memcmp(file.data(), kMagic, sizeof kMagic) != 0) return std::nullopt;
  if (get(file, 8, 4) != detail::kCacheFormatVersion) return std::nullopt;
  const uint64_t flags = get(file, 12, 4);
  if ((flags & ~uint64_t{kFlagPtx}) != 0) return std::nullopt;
  if (std::memcmp(file.data() + 16, key.data(), kKeyBytes) != 0) return std::nullopt;
  const uint64_t payload = get(file, 48, 8), log = get(file, 56, 8), target = get(file, 64, 8);
  // Compared one by one so huge (corrupt) sizes cannot overflow the sum.
  const uint64_t body = file.size() - kHeaderBytes;
  if (payload > body || log > body - payload || target != body - payload - log) return std::nullopt;
  const Digest128 sum = checksum(file);
  if (get(file, kChecksumOffset, 8) != sum.hi || get(file, kChecksumOffset + 8, 8) != sum.lo) return std::nullopt;
  if (payload == 0) return std::nullopt;

  CompiledKernel kernel;
  const char* p = file.data() + kHeaderBytes;
  kernel.cubin.assign(p, p + payload);
  kernel.log.assign(p + payload, p + payload + log);
  kernel.target.assign(p + payload + log, p + payload + log + target);
  kernel.is_ptx = (flags & kFlagPtx) != 0;
  kernel.resources = parse_ptxas_report(kernel.log, kernel_name);
  return kernel;
}

LoadResult load(const fs::path& dir, const std::string& key, const std::string& kernel_name) {
  std::ifstream in(file_for(dir, key), std::ios::binary);
  if (!in) return {LoadStatus::missing, std::nullopt};
  // Read to the end rather than trusting a size taken beforehand: a concurrent rename replaces the file
  // as a whole, and this stream keeps reading the inode it opened.
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return {LoadStatus::corrupt, std::nullopt};
  auto kernel = decode(key, bytes, kernel_name);
  if (!kernel) return {LoadStatus::corrupt, std::nullopt};
  kernel->from_disk_cache = true;
  return {LoadStatus::hit, std::move(kernel)};
}

void store(const fs::path& dir, const std::string& key, const CompiledKernel& kernel) {
  const std::vector<char> bytes = encode(key, kernel);
  const fs::path folder = dir / "kernels";
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) throw_error("cannot create the kernel cache directory '" + folder.string() + "': " + ec.message());
  const fs::path temp = folder / temp_name(key);
  const fs::path final_path = file_for(dir, key);
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (out) out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      fs::remove(temp, ec);
      throw_error("cannot write the kernel cache file '" + temp.string() + "'");
    }
  }
  fs::rename(temp, final_path, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(temp, ignored);
    throw_error("cannot rename '" + temp.string() + "' to '" + final_path.string() + "': " + ec.message());
  }
}

}  // namespace disk
}  // namespace lutmm::jit
