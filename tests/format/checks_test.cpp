// check_bits, check_group_size and QuantizedWeight::validate().
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <string>

#include "format/test_util.hpp"
#include "lutmm/format.hpp"
#include "lutmm/quantize.hpp"

namespace lutmm {
namespace {

TEST(Checks, Bits) {
  for (int bits : {2, 3, 4}) EXPECT_NO_THROW(check_bits(bits));
  for (int bits : {-1, 0, 1, 5, 8})
    expect_error([&] { check_bits(bits); }, "bits", "got " + std::to_string(bits));
}

TEST(Checks, GroupSizeAccepted) {
  for (int g : {32, 64, 128, 256}) {
    EXPECT_NO_THROW(check_group_size(g, 4096)) << g;
    EXPECT_NO_THROW(check_group_size(g, 256)) << g;
  }
  EXPECT_NO_THROW(check_group_size(32, 32));
  EXPECT_NO_THROW(check_group_size(320, 320));  // one group per row
  EXPECT_NO_THROW(check_group_size(16, 16));
  EXPECT_NO_THROW(check_group_size(64, 320));
  EXPECT_NO_THROW(check_group_size(28672, 28672));
}

TEST(Checks, GroupSizeRejected) {
  // The message of the example in error.hpp, verbatim.
  try {
    check_group_size(48, 320);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "lutmm: argument 'group_size': expected one of 32, 64, 128, 256 or K (=320), got 48");
  }
  expect_error([] { check_group_size(128, 320); }, "group_size", "got 128");  // does not divide K
  expect_error([] { check_group_size(256, 128); }, "group_size", "got 256");  // larger than K
  expect_error([] { check_group_size(0, 4096); }, "group_size", "got 0");
  expect_error([] { check_group_size(-128, 4096); }, "group_size", "got -128");
  expect_error([] { check_group_size(16, 4096); }, "group_size", "got 16");
  expect_error([] { check_group_size(100, 100); }, "k", "got 100");  // per row needs K % 16 == 0
  expect_error([] { check_group_size(128, 0); }, "k", "got 0");
  expect_error([] { check_group_size(128, -256); }, "k", "got -256");
}

QuantizedWeight small_weight(int bits = 4) {
  const std::vector<float> w = gaussian(8, 64, 7);
  QuantizeOptions o;
  o.bits = bits;
  o.group_size = 32;
  return quantize(w.data(), 8, 64, o);
}

TEST(Checks, ValidateAcceptsQuantizerOutput) {
  for (int bits : {2, 3, 4}) EXPECT_NO_THROW(small_weight(bits).validate()) << bits;
}

// Each inconsistency, one at a time, is reported under the field's name.
TEST(Checks, ValidateCatchesEachInconsistency) {
  struct Breakage {
    std::string field, got;
    std::function<void(QuantizedWeight&)> apply;
  };
  const uint16_t nan_bits = 0x7fc0, inf_bits = 0x7f80;  // bf16
  const std::vector<Breakage> cases = {
      {"n", "got 0", [](QuantizedWeight& q) { q.n = 0; }},
      {"n", "got -3", [](QuantizedWeight& q) { q.n = -3; }},
      {"k", "got 0", [](QuantizedWeight& q) { q.k = 0; }},
      {"n", "x", [](QuantizedWeight& q) { q.n = std::numeric_limits<int64_t>::max() / 2; }},
      {"bits", "got 5", [](QuantizedWeight& q) { q.bits = 5; }},
      {"bits", "got 1", [](QuantizedWeight& q) { q.bits = 1; }},
      {"group_size", "got 48", [](QuantizedWeight& q) { q.group_size = 48; }},
      {"group_size", "got 128", [](QuantizedWeight& q) { q.group_size = 128; }},  // K = 64
      {"group_size", "got 0", [](QuantizedWeight& q) { q.group_size = 0; }},
      {"k", "got 40",
       [](QuantizedWeight& q) {
         q.k = 40;
         q.group_size = 40;
       }},
      {"dtype", "enum value 9", [](QuantizedWeight& q) { q.dtype = static_cast<DType>(9); }},
      {"table", "got 15", [](QuantizedWeight& q) { q.table.pop_back(); }},
      {"table", "got 16", [](QuantizedWeight& q) { q.bits = 3; }},  // 16 entries for 3 bits
      {"codes", "got 511", [](QuantizedWeight& q) { q.codes.pop_back(); }},
      {"scales", "got 17", [](QuantizedWeight& q) { q.scales.push_back(0); }},
      {"scales", "got 16", [](QuantizedWeight& q) { q.group_size = 64; }},  // 8 scales now
      {"table", "index 3", [=](QuantizedWeight& q) { q.table[3] = nan_bits; }},
      {"table", "index 0", [=](QuantizedWeight& q) { q.table[0] = inf_bits; }},
      {"scales", "row 2, group 1", [=](QuantizedWeight& q) { q.scales[5] = inf_bits; }},
      {"scales", "row 0, group 0", [=](QuantizedWeight& q) { q.scales[0] = nan_bits; }},
      {"codes", "16 at row 1, column 3", [](QuantizedWeight& q) { q.codes[67] = 16; }},
      {"codes", "255 at row 7, column 63", [](QuantizedWeight& q) { q.codes[511] = 255; }},
  };
  for (const Breakage& b : cases) {
    QuantizedWeight q = small_weight();
    b.apply(q);
    SCOPED_TRACE(b.field + " / " + b.got);
    expect_error([&] { q.validate(); }, "QuantizedWeight." + b.field, b.got);
  }
  // A code that fits 4 bits but not 3.
  QuantizedWeight q3 = small_weight(3);
  q3.codes[10] = 8;
  expect_error([&] { q3.validate(); }, "QuantizedWeight.codes", "8 at row 0, column 10");
}

}  // namespace
}  // namespace lutmm
