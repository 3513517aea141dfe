// The README's usage example is the program docs/examples/readme_example.cpp, which CMake builds and runs
// as the test `readme_example`: this keeps the text in the README identical to the code that runs.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "tools/run_tool.hpp"

namespace lutmm::test {
namespace {

// The body of the first ```cpp fenced block of a Markdown text (empty when there is none).
std::string first_cpp_block(const std::string& markdown) {
  const std::string open = "```cpp\n";
  const size_t start = markdown.find(open);
  if (start == std::string::npos) return {};
  const size_t body = start + open.size();
  const size_t end = markdown.find("\n```", body - 1);
  if (end == std::string::npos) return {};
  return markdown.substr(body, end + 1 - body);
}

TEST(Readme, CodeBlockIsTheExampleProgram) {
  const std::filesystem::path root = LUTMM_SOURCE_DIR;
  const std::string readme = slurp(root / "README.md");
  const std::string example = slurp(root / "docs" / "examples" / "readme_example.cpp");
  ASSERT_FALSE(readme.empty()) << "README.md is missing or empty";
  ASSERT_FALSE(example.empty()) << "docs/examples/readme_example.cpp is missing or empty";
  const std::string block = first_cpp_block(readme);
  ASSERT_FALSE(block.empty()) << "README.md has no ```cpp block";
  EXPECT_EQ(block, example) << "the README's ```cpp block differs from docs/examples/readme_example.cpp; "
                               "copy the file into the README";
}

TEST(Readme, FirstCppBlockExtraction) {
  EXPECT_EQ(first_cpp_block("text\n```cpp\nint a;\nint b;\n```\nmore\n```cpp\nx\n```\n"), "int a;\nint b;\n");
  EXPECT_EQ(first_cpp_block("```sh\nls\n```\n"), "");
  EXPECT_EQ(first_cpp_block("```cpp\nunterminated"), "");
}

TEST(Readme, NamesTheTwoCommandsAndTheDocs) {
  const std::string readme = slurp(std::filesystem::path(LUTMM_SOURCE_DIR) / "README.md");
  for (const char* needle : {"scripts/main", "scripts/test", "docs/FORMAT.md", "docs/NOTES.md", "docs/TUNING.md"}) {
    EXPECT_NE(readme.find(needle), std::string::npos) << needle;
  }
}

}  // namespace
}  // namespace lutmm::test
