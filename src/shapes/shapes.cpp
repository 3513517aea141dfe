// Shape files: one "M N K" per line (out[M,N] = x[M,K] . W[N,K]^T).
//
//   # Linear-layer shapes of diffusion models ...   <- prose (ends with '.'): not a label
//   # SD1.5                                          <- heading: label of the shapes that follow
//   2 1280 320                                       <- Shape{2, 1280, 320, "SD1.5"}
//   77 320 768   # text path                         <- '#' ends the data part of a line
//
// A comment line is a heading unless it ends with '.', so a file's prose introduction never becomes a
// label while "# SD1.5" does. The last heading seen before a shape line labels it and every shape after
// it until the next heading; blank lines change nothing.
#include "lutmm/shapes.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <fmt/format.h>

#include "lutmm/error.hpp"
#include "shapes/embedded_shapes.hpp"

namespace lutmm {
namespace {

std::string_view trim(std::string_view s) {
  const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; };
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::string builtin_list() {
  std::string names;
  for (const auto& set : shapes_detail::embedded_shape_sets()) {
    if (!names.empty()) names += ", ";
    names += set.name;
  }
  return names;
}

}  // namespace

std::vector<Shape> parse_shapes(std::string_view text, std::string_view source_name) {
  const std::string source = source_name.empty() ? std::string("<text>") : std::string(source_name);
  std::vector<Shape> shapes;
  std::string label;
  int64_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);

    line = trim(line);
    if (line.empty()) continue;
    if (line.front() == '#') {
      const std::string_view comment = trim(line.substr(1));
      if (!comment.empty() && comment.back() != '.') label = comment;
      continue;
    }
    if (const size_t hash = line.find('#'); hash != std::string_view::npos) line = trim(line.substr(0, hash));

    std::string_view tokens[3];
    int count = 0;
    for (std::string_view rest = line; !(rest = trim(rest)).empty();) {
      const size_t end = std::min(rest.find_first_of(" \t"), rest.size());
      if (count < 3) tokens[count] = rest.substr(0, end);
      ++count;
      rest.remove_prefix(end);
    }
    if (count != 3) {
      throw_error(fmt::format("{}:{}: expected 3 integers 'M N K', got {} value{} in '{}'", source, line_number,
                              count, count == 1 ? "" : "s", line));
    }
    int64_t values[3];
    static constexpr const char* kNames[3] = {"M", "N", "K"};
    for (int i = 0; i < 3; ++i) {
      const std::string_view token = tokens[i];
      const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), values[i]);
      if (ec == std::errc::result_out_of_range) {
        throw_error(fmt::format("{}:{}: expected {} to fit in 64 bits, got '{}'", source, line_number, kNames[i],
                                token));
      }
      if (ec != std::errc() || end != token.data() + token.size()) {
        throw_error(fmt::format("{}:{}: expected an integer for {}, got '{}'", source, line_number, kNames[i],
                                token));
      }
      if (values[i] < 1) {
        throw_error(fmt::format("{}:{}: expected {} >= 1, got {}", source, line_number, kNames[i], values[i]));
      }
    }
    shapes.push_back(Shape{values[0], values[1], values[2], label});
  }
  return shapes;
}

std::vector<Shape> load_shapes(std::string_view name_or_path) {
  const std::string expected = "a built-in shape set (" + builtin_list() + ") or a shape file path";
  if (name_or_path.empty()) throw_argument_error("name_or_path", expected, "an empty string");
  for (const auto& set : shapes_detail::embedded_shape_sets()) {
    if (name_or_path == set.name) return parse_shapes(set.text, set.name);
  }

  const std::filesystem::path path(name_or_path);
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status)) {
    throw_argument_error("name_or_path", expected, fmt::format("'{}' (no such set or file)", name_or_path));
  }
  if (std::filesystem::is_directory(status)) {
    throw_argument_error("name_or_path", expected, fmt::format("'{}' (a directory)", name_or_path));
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) throw_error(fmt::format("cannot open shape file '{}'", name_or_path));
  const std::string content{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
  if (file.bad()) throw_error(fmt::format("cannot read shape file '{}'", name_or_path));
  std::vector<Shape> shapes = parse_shapes(content, path.string());
  if (shapes.empty()) throw_error(fmt::format("{}: expected at least one 'M N K' line, found none", path.string()));
  return shapes;
}

std::vector<std::string> builtin_shape_set_names() {
  std::vector<std::string> names;
  for (const auto& set : shapes_detail::embedded_shape_sets()) names.emplace_back(set.name);
  return names;
}

}  // namespace lutmm
