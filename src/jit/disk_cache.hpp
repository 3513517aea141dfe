#pragma once
// The on-disk cubin cache: one file per cache key, <cache_directory()>/kernels/<key>.cubin.
//
// File layout (integers little-endian):
//   offset  size  field
//        0     8  magic "LUTMMJIT"
//        8     4  format version (detail::kCacheFormatVersion)
//       12     4  flags: bit 0 = payload is PTX text, not a cubin
//       16    32  the cache key (hex), so a file renamed or copied under another key is refused
//       48     8  payload bytes (P)
//       56     8  log bytes (L): NVRTC + ptxas -v log, so resources are known on a hit
//       64     8  target bytes (T): "sm_90a", "compute_121", ...
//       72    16  checksum: Hasher128 digest (hi, lo) of bytes [0, 72) followed by payload, log, target
//       88     P  payload, then L bytes of log, then T bytes of target; the file ends exactly there
// Anything else (short, long, wrong magic/version/key, bad checksum) is corrupt.
//
// Writers never expose a partial file: they write <key>.tmp.<pid>.<thread>.<counter> in the same folder and
// std::filesystem::rename it over the final name (atomic on POSIX). Racing writers of one key write the same
// bytes, so whichever rename lands last leaves a whole, valid file.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "jit/jit.hpp"

namespace lutmm::jit::disk {

std::filesystem::path file_for(const std::filesystem::path& dir, const std::string& key);

std::vector<char> encode(const std::string& key, const CompiledKernel& kernel);
// The kernel a file's bytes hold (log, resources parsed for kernel_name, payload), or nullopt when corrupt.
std::optional<CompiledKernel> decode(const std::string& key, const std::vector<char>& bytes,
                                     const std::string& kernel_name);

enum class LoadStatus { hit, missing, corrupt };
struct LoadResult {
  LoadStatus status = LoadStatus::missing;
  std::optional<CompiledKernel> kernel;  // set when status == hit
};
LoadResult load(const std::filesystem::path& dir, const std::string& key, const std::string& kernel_name);

// Writes atomically (see above); throws Error naming the file on an I/O failure, leaving no temp file.
void store(const std::filesystem::path& dir, const std::string& key, const CompiledKernel& kernel);

}  // namespace lutmm::jit::disk
