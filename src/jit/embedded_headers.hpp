#pragma once
#include <vector>

namespace lutmm::jit {

// One device header as NVRTC sees it: `#include "<name>"` resolves to text.
struct EmbeddedHeader {
  const char* name;  // relative to device/, e.g. "lutmm/mma/mma_sm80.cuh"
  const char* text;
};

// Every header under device/, embedded at build time (cmake/embed_files.cmake).
const std::vector<EmbeddedHeader>& embedded_device_headers();

}  // namespace lutmm::jit
