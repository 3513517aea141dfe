// The .npy format (numpy.lib.format): the magic "\x93NUMPY", a major and a minor version byte, the header
// length (uint16 little-endian in version 1, uint32 in versions 2 and 3), then the header: a Python dict
// literal such as {'descr': '<f4', 'fortran_order': False, 'shape': (4096, 4096), } padded with spaces
// and ended by '\n'; the raw array data follows it directly.
#include "npy.hpp"

#include <cctype>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <string_view>

#include <fmt/core.h>

#include "lutmm/dtype.hpp"
#include "lutmm/error.hpp"

namespace lutmm::cli {
namespace {

[[noreturn]] void bad(std::string_view expected, std::string_view got) {
  throw_argument_error("input", expected, got);
}

uint32_t read_le(const unsigned char* p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// A parser for exactly the dict literal numpy writes: string keys, values that are a string, True/False
// or a tuple of non-negative integers.
class HeaderParser {
 public:
  explicit HeaderParser(std::string_view text) : s_(text) {}

  struct Value {
    enum Kind { string, boolean, tuple } kind = string;
    std::string text;
    bool flag = false;
    std::vector<int64_t> dims;
  };

  std::map<std::string, Value> parse_dict() {
    std::map<std::string, Value> dict;
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') break;
      const std::string key = parse_string();
      expect(':');
      if (!dict.emplace(key, parse_value()).second) fail(fmt::format("the key '{}' twice", key));
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != '}') fail(fmt::format("',' or '}}' after the value of '{}'", key));
    }
    expect('}');
    skip_space();
    if (pos_ != s_.size()) fail("nothing but spaces after the dict");
    return dict;
  }

 private:
  [[noreturn]] void fail(std::string_view what) const {
    bad(fmt::format("a .npy header dict with {}", what), fmt::format("'{}'", s_));
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c) fail(fmt::format("'{}' at offset {}", c, pos_));
    ++pos_;
  }
  std::string parse_string() {
    skip_space();
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail(fmt::format("a quoted string at offset {}", pos_));
    const size_t end = s_.find(quote, pos_ + 1);
    if (end == std::string_view::npos) fail("a closed string");
    std::string out(s_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return out;
  }
  int64_t parse_int() {
    skip_space();
    int64_t v = 0;
    const size_t start = pos_;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      if (v > (INT64_MAX - 9) / 10) fail("dimensions that fit in 64 bits");
      v = v * 10 + (s_[pos_++] - '0');
    }
    if (pos_ == start) fail(fmt::format("a dimension at offset {}", start));
    return v;
  }
  Value parse_value() {
    skip_space();
    Value v;
    if (peek() == '\'' || peek() == '"') {
      v.kind = Value::string;
      v.text = parse_string();
    } else if (s_.substr(pos_, 4) == "True") {
      v.kind = Value::boolean;
      v.flag = true;
      pos_ += 4;
    } else if (s_.substr(pos_, 5) == "False") {
      v.kind = Value::boolean;
      pos_ += 5;
    } else if (peek() == '(') {
      v.kind = Value::tuple;
      ++pos_;
      skip_space();
      while (peek() != ')') {
        v.dims.push_back(parse_int());
        skip_space();
        if (peek() == ',') {
          ++pos_;
          skip_space();
        } else if (peek() != ')') {
          fail(fmt::format("',' or ')' in the shape at offset {}", pos_));
        }
      }
      ++pos_;
    } else {
      fail(fmt::format("a string, True, False or a tuple at offset {}", pos_));
    }
    return v;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace

NpyMatrix read_npy_matrix(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw_error(fmt::format("cannot open the input file '{}'", path));
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (file.bad()) throw_error(fmt::format("cannot read the input file '{}'", path));
  const auto* u = reinterpret_cast<const unsigned char*>(bytes.data());

  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0) {
    bad("a .npy file (starting with \\x93NUMPY)", fmt::format("'{}' ({} bytes)", path, bytes.size()));
  }
  const int major = u[6];
  if (major < 1 || major > 3) bad(".npy format version 1, 2 or 3", fmt::format("version {}.{}", major, u[7]));
  const size_t prefix = major == 1 ? 10 : 12;
  if (bytes.size() < prefix) bad("a complete .npy preamble", fmt::format("{} bytes", bytes.size()));
  const size_t header_len = read_le(u + 8, major == 1 ? 2 : 4);
  if (bytes.size() < prefix + header_len) {
    bad(fmt::format("a header of {} bytes", header_len), fmt::format("a file of {} bytes", bytes.size()));
  }
  std::string_view header(bytes.data() + prefix, header_len);
  if (header.empty() || header.back() != '\n') bad("a .npy header ending in a newline", fmt::format("'{}'", header));

  const auto dict = HeaderParser(header).parse_dict();
  const auto field = [&](const char* key, HeaderParser::Value::Kind kind) -> const HeaderParser::Value& {
    const auto it = dict.find(key);
    if (it == dict.end() || it->second.kind != kind) bad(fmt::format("a .npy header with '{}'", key), header);
    return it->second;
  };
  if (dict.size() != 3) bad("a .npy header with exactly descr, fortran_order and shape", header);
  const std::string descr = field("descr", HeaderParser::Value::string).text;
  const bool fortran = field("fortran_order", HeaderParser::Value::boolean).flag;
  const std::vector<int64_t>& dims = field("shape", HeaderParser::Value::tuple).dims;

  int item = 0;
  if (descr == "<f4") item = 4;
  else if (descr == "<f2") item = 2;
  else bad("dtype '<f4' (float32) or '<f2' (float16), little-endian", fmt::format("'{}'", descr));
  if (dims.size() != 2) bad("a 2-D array", fmt::format("{} dimension{}", dims.size(), dims.size() == 1 ? "" : "s"));
  if (dims[0] == 0 || dims[1] == 0) bad("a non-empty array", fmt::format("shape ({}, {})", dims[0], dims[1]));
  if (dims[0] > (int64_t{1} << 40) / dims[1]) bad("at most 2^40 elements", fmt::format("shape ({}, {})", dims[0], dims[1]));

  NpyMatrix m;
  m.rows = dims[0];
  m.cols = dims[1];
  m.descr = descr;
  const int64_t count = m.rows * m.cols;
  const size_t data_bytes = bytes.size() - prefix - header_len;
  if (data_bytes != static_cast<size_t>(count * item)) {
    bad(fmt::format("{} bytes of data for shape ({}, {})", count * item, m.rows, m.cols),
        fmt::format("{} bytes", data_bytes));
  }
  m.data.resize(static_cast<size_t>(count));
  const unsigned char* data = u + prefix + header_len;
  for (int64_t i = 0; i < count; ++i) {
    float v;
    if (item == 4) {
      const uint32_t bits = read_le(data + 4 * i, 4);
      std::memcpy(&v, &bits, 4);
    } else {
      v = bits_to_float(static_cast<uint16_t>(read_le(data + 2 * i, 2)), DType::f16);
    }
    // Fortran order stores column after column: element i is (i % rows, i / rows).
    const int64_t r = fortran ? i % m.rows : i / m.cols;
    const int64_t c = fortran ? i / m.rows : i % m.cols;
    if (!std::isfinite(v)) bad("finite values", fmt::format("{} at [{}][{}]", v, r, c));
    m.data[static_cast<size_t>(r * m.cols + c)] = v;
  }
  return m;
}

}  // namespace lutmm::cli
