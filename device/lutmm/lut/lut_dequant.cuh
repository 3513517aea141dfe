#pragma once
// Lookup-table dequantizers: a lane's packed codes (see layout/packed_layout.cuh) -> the four 32-bit
// registers of an mma A-fragment, each holding two 16-bit table values. Two strategies read the same
// packed layout:
//
//  SharedPairLut: a table of all 2^(2b) code pairs, each entry the two 16-bit values of one register, so
//    one shared-memory load dequantizes two weights. It is stored 32 times, interleaved so that copy c sits
//    in bank c: entry e of lane l is at byte e * kRowBytes + l * 4, and a warp's 32 random lookups never
//    conflict. With 128-byte rows (2, 3 and 4 bits: 2, 8 and 32 KB) the address of a pair takes a shift and
//    a mask of the packed word (two instructions); with 256-byte rows (4 bits, 64 KB, the second half of
//    every row unused) it is one byte permute: the pair's byte becomes bits 8..15 and lane * 4 bits 0..7.
//
//  RegisterLut: the 2^b values live in registers as byte planes (lo[j] holds the low bytes of entries
//    4j..4j+3, hi[j] the high bytes), and prmt does four 3-bit-indexed byte selects at once. 16 entries take
//    two selects and a blend on the code's bit 3. No shared memory and no bank traffic; more ALU work.
//
// Both return unscaled table values; the caller multiplies by the group scale (mma::mul_x2).
#include "lutmm/common.cuh"
#include "lutmm/layout/packed_layout.cuh"
#include "lutmm/lut/code_index.cuh"
#include "lutmm/ptx/memory.cuh"

namespace lutmm::lut {

// Lane e < 2^b of a warp loads table entry e; the other lanes get 0. Both dequantizers then spread the
// table with shuffles. (Every thread of every block loading every entry itself sent all of a decode
// kernel's ~2000 warps to one L2 line at once: 7% of its stall samples, docs/NOTES.md v1.5.)
template <int kBits>
LUTMM_DEVICE uint32_t table_entry_of_lane(const uint16_t* table, int lane) {
  return lane < (1 << kBits) ? static_cast<uint32_t>(__ldg(table + lane)) : 0u;
}
// The same as a load the compiler issues where it stands (volatile: not moved past the copies that follow it),
// for a kernel that wants the table's round trip to overlap its prologue instead of following it.
template <int kBits>
LUTMM_DEVICE uint32_t table_entry_of_lane_now(const uint16_t* table, int lane) {
  uint16_t v = 0;
  if (lane < (1 << kBits)) asm volatile("ld.global.nc.u16 %0, [%1];\n" : "=h"(v) : "l"(table + lane));
  return v;
}

// This lane's kBits packed words of one atom at src (in shared memory): one 16-byte load for 4 bits, 8 for
// 2; 3-bit lanes own 12 bytes at a 12-byte stride, only 4-byte aligned, so three words.
template <int kBits>
LUTMM_DEVICE void load_lane_words(const uint32_t* src, uint32_t (&words)[kBits]) {
  if constexpr (kBits == 4) {
    const dev::uint4_t v = *reinterpret_cast<const dev::uint4_t*>(src);
    words[0] = v.x; words[1] = v.y; words[2] = v.z; words[3] = v.w;
  } else if constexpr (kBits == 2) {
    const uint2 v = *reinterpret_cast<const uint2*>(src);
    words[0] = v.x; words[1] = v.y;
  } else {
#pragma unroll
    for (int w = 0; w < kBits; ++w) words[w] = src[w];
  }
}

// Where a kernel's pair table lives: 128-byte rows in static shared memory (declared only by the kernels
// that use it: any static shared memory beyond the table can cost a block its place on an SM, docs/NOTES.md
// v1.7), 256-byte rows at the start of the dynamic shared memory (kRowBytes 0, a register table, declares
// nothing).
template <int kBits, int kRowBytes>
LUTMM_DEVICE uint32_t* pair_table_storage(uint8_t* dynamic_smem);

template <int kBits, int kRowBytes = 128>
struct SharedPairLut {
  static constexpr int kEntries = 1 << (2 * kBits);
  static constexpr int kCopies = 32;
  static constexpr int kRowWords = kRowBytes / 4;
  static constexpr int kWords = kEntries * kRowWords;
  static constexpr int kBytes = kWords * 4;
  static_assert(kRowBytes == 128 || (kRowBytes == 256 && kBits == 4), "256-byte rows need byte-aligned pair indices");

  // The table's shared-memory address, as lane 0 of the warp has it. On sm_90 that address is the CTA's shared
  // window base (SR_CgaCtaId << 24, +1 KB) plus the table's offset, a run-time value: read back through a shuffle,
  // ptxas knows it is warp-uniform, keeps it in a uniform register and issues each lookup as one LDS [offset + UR].
  // Taken from the pointer directly, ptxas kept it in a vector register in 11 of the 29 decode and small-batch
  // kernels of the H200 database and added it to every offset (one IMAD.IADD a lookup: the 256 x 16 x 128 decode
  // loop 636 instructions, 503 with the shuffle; docs/NOTES.md v1.32).
  uint32_t table_addr;
  uint32_t lane4;  // lane * 4: this lane's copy

  // Called by all 32 lanes of a warp together (the shuffle). used = false (KernelLut of a register table): a
  // placeholder that touches nothing.
  LUTMM_DEVICE SharedPairLut(const void* table, uint32_t lane, bool used)
      : table_addr(used ? __shfl_sync(0xffffffffu, ptx::smem_addr(table), 0) : 0u), lane4(used ? lane * 4 : 0u) {}

  // Every thread of the block takes part; the caller synchronises afterwards. A row's 32 copies are eight
  // 16-byte stores of four copies each, so a thread writes row i / 8, copies 4 (i % 8) .. + 3 of chunk i and
  // fetches the row's two values from the lanes holding them (lane e: entry e). The chunk count (128, 512,
  // 2048) and the thread count are multiples of 32, so every warp runs the loop as a whole, as the
  // shuffles need. (One 4-byte store per thread and copy took four times the iterations: ~600 instructions
  // a thread for the 4-bit table, in every block's prologue.)
  // entry: table_entry_of_lane(table, tid & 31), loaded by the caller.
  LUTMM_DEVICE static void build(uint32_t* smem, uint32_t entry, int tid, int threads) {
    constexpr int kChunksPerRow = kCopies / 4;
    for (int i = tid; i < kEntries * kChunksPerRow; i += threads) {
      const uint32_t row = static_cast<uint32_t>(i / kChunksPerRow);
      uint32_t c0, c1;
      layout::pair_codes(kBits, row, c0, c1);
      const uint32_t v = __shfl_sync(0xffffffffu, entry, c0) | (__shfl_sync(0xffffffffu, entry, c1) << 16);
      *reinterpret_cast<dev::uint4_t*>(smem + row * kRowWords + (i % kChunksPerRow) * 4) = dev::uint4_t{v, v, v, v};
    }
  }

  LUTMM_DEVICE void slice(const uint32_t* w, int s, uint32_t (&a)[4]) const {
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      uint32_t offset;
      if constexpr (kRowBytes == 256) {
        // bytes of the address: [lane4, pair byte p of w[s], 0, 0] (lane4 < 128: its bytes 1..3 are 0)
        offset = ptx::prmt(w[s], lane4, 0x5504u | (static_cast<uint32_t>(p) << 4));
      } else {
        offset = pair_offset<kBits>(w, s, p, lane4);
      }
      a[p] = ptx::lds_u32(table_addr + offset);
    }
  }
};

template <int kBits, int kRowBytes>
LUTMM_DEVICE uint32_t* pair_table_storage(uint8_t* dynamic_smem) {
  if constexpr (kRowBytes == 128) {
    __shared__ __align__(16) uint32_t static_pair_table[SharedPairLut<kBits, 128>::kWords];
    return static_pair_table;
  } else {
    return reinterpret_cast<uint32_t*>(dynamic_smem);
  }
}

template <int kBits>
struct RegisterLut {
  static constexpr int kBytes = 0;
  static constexpr int kEntries = 1 << kBits;
  static constexpr int kPlanes = kEntries > 4 ? kEntries / 4 : 1;
  uint32_t lo[4], hi[4];

  // Called by all 32 lanes of a warp together; entry: table_entry_of_lane(table, lane).
  LUTMM_DEVICE void load(uint32_t entry) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      lo[j] = 0;
      hi[j] = 0;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int e = 4 * j + i;
        const uint32_t v = __shfl_sync(0xffffffffu, entry, e < kEntries ? e : 0);
        if (e < kEntries) {
          lo[j] |= (v & 0xffu) << (8 * i);
          hi[j] |= (v >> 8) << (8 * i);
        }
      }
    }
  }

  LUTMM_DEVICE void slice(const uint32_t* w, int s, uint32_t (&a)[4]) const {
    const uint32_t nib = slice_nibbles<kBits>(w, s);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint32_t sel = nib >> (16 * h);  // prmt reads the low 16 bits: four 4-bit selectors
      uint32_t l, u;
      if constexpr (kBits == 4) {
        const uint32_t s7 = sel & 0x7777u;
        const uint32_t upper = ptx::prmt(0u, 0xffffffffu, (sel >> 1) & 0x4444u);  // 0xff where code >= 8
        l = (ptx::prmt(lo[0], lo[1], s7) & ~upper) | (ptx::prmt(lo[2], lo[3], s7) & upper);
        u = (ptx::prmt(hi[0], hi[1], s7) & ~upper) | (ptx::prmt(hi[2], hi[3], s7) & upper);
      } else {
        l = ptx::prmt(lo[0], lo[1], sel);  // codes < 8: bit 3 of every selector is 0
        u = ptx::prmt(hi[0], hi[1], sel);
      }
      a[2 * h] = ptx::prmt(l, u, 0x5140u);      // (entry0, entry1) as two 16-bit values
      a[2 * h + 1] = ptx::prmt(l, u, 0x7362u);  // (entry2, entry3)
    }
  }
};

// The dequantizer a kernel uses: the pair table in shared memory (kRowBytes 128 or 256, at `storage`:
// pair_table_storage) or the register table (kRowBytes 0). Constructed by every thread of the block (the
// shared table is built cooperatively; the caller's next barrier publishes it).
template <int kBits, int kRowBytes>
struct KernelLut {
  static constexpr bool kShared = kRowBytes != 0;
  using Shared = SharedPairLut<kBits, kRowBytes == 256 ? 256 : 128>;
  Shared shared;
  RegisterLut<kBits> reg;

  // From this lane's table entry (table_entry_of_lane, or table_entry_of_lane_now where a kernel loads it ahead).
  LUTMM_DEVICE KernelLut(uint32_t* storage, uint32_t entry, int tid, int threads)
      : shared(storage, static_cast<uint32_t>(tid & 31), kShared) {
    if constexpr (kShared) {
      Shared::build(storage, entry, tid, threads);
    } else {
      reg.load(entry);
    }
  }
  LUTMM_DEVICE KernelLut(uint32_t* storage, const uint16_t* table, int tid, int threads)
      : KernelLut(storage, table_entry_of_lane<kBits>(table, tid & 31), tid, threads) {}

  LUTMM_DEVICE void slice(const uint32_t* w, int s, uint32_t (&a)[4]) const {
    if constexpr (kShared) {
      shared.slice(w, s, a);
    } else {
      reg.slice(w, s, a);
    }
  }
};

}  // namespace lutmm::lut
