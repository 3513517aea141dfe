#pragma once
#include <vector>

namespace lutmm::shapes_detail {

// One built-in shape set: the text of data/shapes/<name>.txt.
struct EmbeddedShapeSet {
  const char* name;  // the file name without .txt: "diffusion", "llm"
  const char* text;
};

// Every data/shapes/*.txt, sorted by name, embedded at build time (cmake/embed_files.cmake).
const std::vector<EmbeddedShapeSet>& embedded_shape_sets();

}  // namespace lutmm::shapes_detail
