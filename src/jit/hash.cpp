#include "jit/hash.hpp"

#include <bit>

namespace lutmm::jit {

namespace {

constexpr uint64_t kFnvPrime = 0x100000001b3ull;
constexpr uint64_t kP1 = 0x9e3779b185ebca87ull;  // xxHash64's primes
constexpr uint64_t kP2 = 0xc2b2ae3d27d4eb4full;
constexpr uint64_t kP3 = 0x165667b19e3779f9ull;

uint64_t round_b(uint64_t acc, uint64_t word) { return std::rotl(acc + word * kP2, 31) * kP1; }

// splitmix64's finalizer: every input bit flips each output bit with probability ~1/2.
uint64_t avalanche_a(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// xxHash64's finalizer.
uint64_t avalanche_b(uint64_t x) {
  x ^= x >> 33;
  x *= kP2;
  x ^= x >> 29;
  x *= kP3;
  return x ^ (x >> 32);
}

}  // namespace

std::string Digest128::hex() const {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    out[15 - i] = digits[(hi >> (4 * i)) & 15];
    out[31 - i] = digits[(lo >> (4 * i)) & 15];
  }
  return out;
}

Hasher128& Hasher128::bytes(const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    a_ = (a_ ^ p[i]) * kFnvPrime;
    word_ |= static_cast<uint64_t>(p[i]) << (8 * pending_);
    if (++pending_ == 8) {
      b_ = round_b(b_, word_);
      word_ = 0;
      pending_ = 0;
    }
  }
  length_ += size;
  return *this;
}

Hasher128& Hasher128::u64(uint64_t value) {
  unsigned char le[8];
  for (int i = 0; i < 8; ++i) le[i] = static_cast<unsigned char>(value >> (8 * i));
  return bytes(le, 8);
}

Hasher128& Hasher128::field(std::string_view text) {
  u64(text.size());
  return bytes(text.data(), text.size());
}

Digest128 Hasher128::digest() const {
  uint64_t b = b_;
  if (pending_ > 0) b = round_b(b, word_ ^ (static_cast<uint64_t>(pending_) << 56));
  Digest128 d;
  d.hi = avalanche_a(a_ ^ (length_ * kP3));
  d.lo = avalanche_b(b ^ length_);
  return d;
}

}  // namespace lutmm::jit
