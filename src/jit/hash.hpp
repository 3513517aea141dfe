#pragma once
// A small streaming 128-bit hash for cache keys and cache-file checksums. Not cryptographic: it only has to
// make accidental collisions between kernel builds (and undetected file corruption) vanishingly unlikely.
//
// Two independent 64-bit lanes see the same bytes:
//   lane a: FNV-1a over bytes (offset basis 0xcbf29ce484222325, prime 0x100000001b3)
//   lane b: xxHash64-style rounds over little-endian 8-byte words, acc = rotl(acc + w * P2, 31) * P1,
//           the last partial word zero-padded
// and each lane ends with a different avalanche step that also mixes in the total length. FNV-1a and the
// multiply-rotate rounds fail on unrelated inputs, so the 128-bit result behaves like two independent hashes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace lutmm::jit {

struct Digest128 {
  uint64_t hi = 0, lo = 0;
  std::string hex() const;  // 32 lowercase hex digits, hi first
  bool operator==(const Digest128&) const = default;
};

class Hasher128 {
 public:
  Hasher128& bytes(const void* data, size_t size);
  // A length-prefixed field: ("ab","c") and ("a","bc") hash differently.
  Hasher128& field(std::string_view text);
  Hasher128& u64(uint64_t value);  // 8 bytes, little-endian
  Digest128 digest() const;        // does not change the state; more bytes may follow

 private:
  uint64_t a_ = 0xcbf29ce484222325ull;
  uint64_t b_ = 0x27d4eb2f165667c5ull;
  uint64_t length_ = 0;
  uint64_t word_ = 0;  // pending bytes of lane b, little-endian, `pending_` of them
  int pending_ = 0;
};

}  // namespace lutmm::jit
