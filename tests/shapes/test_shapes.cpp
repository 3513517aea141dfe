// Shape-file parsing, labels, error messages with line numbers, and the built-in sets.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <unistd.h>

#include "lutmm/error.hpp"
#include "lutmm/shapes.hpp"

namespace lutmm {
namespace {

// The message of the Error that f throws ("" and a test failure when it throws none).
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no lutmm::Error thrown";
  return "";
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  EXPECT_TRUE(file) << path;
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

// Lines that are neither blank nor comments, counted independently of the parser.
size_t data_lines(const std::string& text) {
  size_t count = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    const size_t first = line.find_first_not_of(" \t\r");
    if (first != std::string::npos && line[first] != '#') ++count;
    start = end + 1;
  }
  return count;
}

// A file in the temporary folder, removed at the end of the test.
class TempFile {
 public:
  TempFile(const std::string& name, const std::string& text)
      : path_(std::filesystem::temp_directory_path() /
              ("lutmm_test_shapes_" + std::to_string(::getpid()) + "_" + name)) {
    std::ofstream(path_, std::ios::binary) << text;
  }
  ~TempFile() { std::filesystem::remove(path_); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

TEST(ParseShapes, ReadsMNKPerLine) {
  const auto shapes = parse_shapes("1 4096 4096\n  32\t14336   4096  \n7 8 9", "t");
  ASSERT_EQ(shapes.size(), 3u);
  EXPECT_EQ(shapes[0].m, 1);
  EXPECT_EQ(shapes[0].n, 4096);
  EXPECT_EQ(shapes[0].k, 4096);
  EXPECT_EQ(shapes[1].m, 32);
  EXPECT_EQ(shapes[1].n, 14336);
  EXPECT_EQ(shapes[1].k, 4096);
  EXPECT_EQ(shapes[2].m, 7);  // the last line needs no newline
  EXPECT_EQ(shapes[2].k, 9);
  EXPECT_EQ(shapes[2].label, "");
}

TEST(ParseShapes, SkipsBlankLinesCommentsAndCarriageReturns) {
  const auto shapes = parse_shapes("\r\n   \n# only prose here.\r\n4 5 6\r\n\n8 9 10   # a trailing note\n", "t");
  ASSERT_EQ(shapes.size(), 2u);
  EXPECT_EQ(shapes[0].m, 4);
  EXPECT_EQ(shapes[0].k, 6);
  EXPECT_EQ(shapes[1].m, 8);
  EXPECT_EQ(shapes[1].n, 9);
  EXPECT_EQ(shapes[1].k, 10);
  EXPECT_TRUE(parse_shapes("", "t").empty());
  EXPECT_TRUE(parse_shapes("# nothing\n\n", "t").empty());
}

TEST(ParseShapes, HeadingsLabelTheShapesBelowThem) {
  const char* text =
      "# Shapes of two models, one 'M N K' per line.\n"
      "# A second line of prose.\n"
      "# ModelA\n"
      "1 2 3\n"
      "4 5 6\n"
      "\n"
      "7 8 9\n"
      "# Model B v1.5\n"
      "# (its text encoder)\n"
      "10 11 12  # inline notes do not relabel\n"
      "# A note that ends a sentence.\n"
      "13 14 15\n";
  const auto shapes = parse_shapes(text, "t");
  ASSERT_EQ(shapes.size(), 5u);
  EXPECT_EQ(shapes[0].label, "ModelA");
  EXPECT_EQ(shapes[1].label, "ModelA");
  EXPECT_EQ(shapes[2].label, "ModelA");  // a blank line keeps the group
  EXPECT_EQ(shapes[3].label, "(its text encoder)");  // the heading just before the shapes wins
  EXPECT_EQ(shapes[4].label, "(its text encoder)");  // prose does not start a new group
}

TEST(ParseShapes, ErrorsNameSourceAndLine) {
  EXPECT_EQ(error_of([] { parse_shapes("1 2 3\n# c\n8 x 256\n", "my.txt"); }),
            "lutmm: my.txt:3: expected an integer for N, got 'x'");
  EXPECT_EQ(error_of([] { parse_shapes("\n8 1152\n", "my.txt"); }),
            "lutmm: my.txt:2: expected 3 integers 'M N K', got 2 values in '8 1152'");
  EXPECT_EQ(error_of([] { parse_shapes("8 1152 256 7\n", "a"); }),
            "lutmm: a:1: expected 3 integers 'M N K', got 4 values in '8 1152 256 7'");
  EXPECT_EQ(error_of([] { parse_shapes("1 1 1\n2 2 2\n3 3 3\n4 0 4\n", "s"); }), "lutmm: s:4: expected N >= 1, got 0");
  EXPECT_EQ(error_of([] { parse_shapes("-3 2 2\n", "s"); }), "lutmm: s:1: expected M >= 1, got -3");
  EXPECT_EQ(error_of([] { parse_shapes("3 2 1.5\n", "s"); }), "lutmm: s:1: expected an integer for K, got '1.5'");
  EXPECT_EQ(error_of([] { parse_shapes("3 2 99999999999999999999\n", "s"); }),
            "lutmm: s:1: expected K to fit in 64 bits, got '99999999999999999999'");
  EXPECT_EQ(error_of([] { parse_shapes("7\n", ""); }),
            "lutmm: <text>:1: expected 3 integers 'M N K', got 1 value in '7'");
}

TEST(BuiltinShapes, BothSetsAreEmbedded) {
  EXPECT_EQ(builtin_shape_set_names(), (std::vector<std::string>{"diffusion", "llm"}));
}

// The embedded text is the repository's data file: same shapes, same labels, one per data line.
void expect_builtin_matches_file(const std::string& name, size_t expected_count) {
  SCOPED_TRACE(name);
  const std::filesystem::path file = std::filesystem::path(LUTMM_SOURCE_DIR) / "data" / "shapes" / (name + ".txt");
  const std::string text = read_file(file);
  EXPECT_EQ(data_lines(text), expected_count);
  const auto builtin = load_shapes(name);
  const auto parsed = parse_shapes(text, file.string());
  ASSERT_EQ(builtin.size(), expected_count);
  ASSERT_EQ(parsed.size(), expected_count);
  for (size_t i = 0; i < builtin.size(); ++i) {
    EXPECT_EQ(builtin[i].m, parsed[i].m) << i;
    EXPECT_EQ(builtin[i].n, parsed[i].n) << i;
    EXPECT_EQ(builtin[i].k, parsed[i].k) << i;
    EXPECT_EQ(builtin[i].label, parsed[i].label) << i;
  }
  // Loading the file by path gives the same set.
  EXPECT_EQ(load_shapes(file.string()).size(), expected_count);
}

TEST(BuiltinShapes, DiffusionHas56ShapesUnderModelLabels) {
  expect_builtin_matches_file("diffusion", 56);
  const auto shapes = load_shapes("diffusion");
  EXPECT_EQ(shapes.front().label, "PixArt-sigma");
  EXPECT_EQ(shapes.front().m, 8);
  EXPECT_EQ(shapes.front().n, 1152);
  EXPECT_EQ(shapes.front().k, 256);
  std::vector<std::string> labels;
  for (const Shape& s : shapes) {
    if (labels.empty() || labels.back() != s.label) labels.push_back(s.label);
  }
  EXPECT_EQ(labels, (std::vector<std::string>{"PixArt-sigma", "SD1.5", "SDXL", "SD3", "DiT"}));
  EXPECT_EQ(shapes.back().label, "DiT");
  EXPECT_EQ(shapes.back().m, 4);
  EXPECT_EQ(shapes.back().n, 2304);
}

TEST(BuiltinShapes, LlmHas66UnlabelledShapes) {
  expect_builtin_matches_file("llm", 66);
  const auto shapes = load_shapes("llm");
  for (const Shape& s : shapes) EXPECT_EQ(s.label, "") << s.m << " " << s.n << " " << s.k;  // only prose comments
  EXPECT_EQ(shapes[10].m, 4096);
  EXPECT_EQ(shapes[10].n, 4096);
  EXPECT_EQ(shapes[65].n, 8192);
  EXPECT_EQ(shapes[65].k, 28672);
}

TEST(LoadShapes, ReadsAFileAndReportsItsName) {
  const TempFile good("good.txt", "# Mine\n16 32 64\n");
  const auto shapes = load_shapes(good.path().string());
  ASSERT_EQ(shapes.size(), 1u);
  EXPECT_EQ(shapes[0].label, "Mine");
  EXPECT_EQ(shapes[0].k, 64);

  const TempFile bad("bad.txt", "16 32 64\n\n16 32\n");
  EXPECT_EQ(error_of([&] { load_shapes(bad.path().string()); }),
            "lutmm: " + bad.path().string() + ":3: expected 3 integers 'M N K', got 2 values in '16 32'");

  const TempFile empty("empty.txt", "# nothing yet\n");
  EXPECT_EQ(error_of([&] { load_shapes(empty.path().string()); }),
            "lutmm: " + empty.path().string() + ": expected at least one 'M N K' line, found none");
}

TEST(LoadShapes, RejectsMissingFilesDirectoriesAndEmptyNames) {
  const std::string expected = "lutmm: argument 'name_or_path': expected a built-in shape set (diffusion, llm) or a "
                               "shape file path, got ";
  EXPECT_EQ(error_of([] { load_shapes("/no/such/shapes.txt"); }),
            expected + "'/no/such/shapes.txt' (no such set or file)");
  EXPECT_EQ(error_of([] { load_shapes("diffusoin"); }), expected + "'diffusoin' (no such set or file)");
  const std::string dir = std::filesystem::temp_directory_path().string();
  EXPECT_EQ(error_of([&] { load_shapes(dir); }), expected + "'" + dir + "' (a directory)");
  EXPECT_EQ(error_of([] { load_shapes(""); }), expected + "an empty string");
}

}  // namespace
}  // namespace lutmm
