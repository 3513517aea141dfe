#pragma once
#include <vector>

namespace lutmm::tuning_detail {

// One shipped tuning database: the text of data/tuning/<name>.json.
struct EmbeddedTuningFile {
  const char* name;  // the file name without .json: the sanitised GPU name ("nvidia_h200")
  const char* text;
};

// Every data/tuning/*.json, sorted by name, embedded at build time (cmake/embed_files.cmake).
const std::vector<EmbeddedTuningFile>& embedded_tuning_files();

}  // namespace lutmm::tuning_detail
