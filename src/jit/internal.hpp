#pragma once
// What the files of src/jit/ share and the tests reach into; not part of any public contract.
#include <string>
#include <vector>

#include "jit/hash.hpp"
#include "jit/jit.hpp"

namespace lutmm::jit::detail {

// Bumped whenever the cache file layout or the meaning of a key changes: part of every key and every file.
inline constexpr uint32_t kCacheFormatVersion = 1;

// Throws an argument error for the first bad field of r.
void validate_request(const CompileRequest& r);

// The exact option list compile() hands NVRTC for r (target from nvrtc_target).
std::vector<std::string> nvrtc_options(const CompileRequest& r, const std::string& target);

// NVRTC's version plus where its library was loaded from and that file's size, so a toolkit patch update
// (same "13.0", different code generator) gets new keys.
const std::string& nvrtc_identity();

// One digest of every embedded device header (name and text), computed once per process.
const Digest128& embedded_headers_digest();

// Prints "lutmm: warning: <message>" to stderr the first time each `kind` comes up in this process.
void warn_once(const std::string& kind, const std::string& message);

}  // namespace lutmm::jit::detail
