// `lutmm info`: versions, GPUs and the kernel cache.
#include "cli.hpp"

namespace lutmm::cli {

Command add_info(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand(
      "info", "Print lutmm, CUDA and NVRTC versions, every GPU and the kernel cache folder");
  return {app, [] {
            print_environment();
            return 0;
          }};
}

}  // namespace lutmm::cli
