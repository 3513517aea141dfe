// `lutmm shapes`: the embedded shape sets or a shape file, one "label M N K" line per shape.
#include <algorithm>
#include <memory>

#include <fmt/core.h>

#include "cli.hpp"

namespace lutmm::cli {
namespace {

void print_set(const std::string& name) {
  const std::vector<Shape> shapes = load_shapes(name);
  fmt::print("# {}: {} shape{}\n", name, shapes.size(), shapes.size() == 1 ? "" : "s");
  size_t width = 5;
  for (const Shape& s : shapes) width = std::max(width, s.label.size());
  fmt::print("{:<{}} {:>6} {:>6} {:>6}\n", "label", width, "M", "N", "K");
  for (const Shape& s : shapes) {
    fmt::print("{:<{}} {:>6} {:>6} {:>6}\n", s.label.empty() ? "-" : s.label, width, s.m, s.n, s.k);
  }
}

}  // namespace

Command add_shapes(CLI::App& parent) {
  auto source = std::make_shared<std::string>();
  CLI::App* app = parent.add_subcommand("shapes", "List problem shapes: an embedded set or a shape file");
  app->add_option("set", *source, "diffusion, llm or a file of 'M N K' lines (default: every embedded set)");
  return {app, [source] {
            if (!source->empty()) {
              print_set(*source);
              return 0;
            }
            const std::vector<std::string> names = builtin_shape_set_names();
            for (size_t i = 0; i < names.size(); ++i) {
              if (i) fmt::print("\n");
              print_set(names[i]);
            }
            return 0;
          }};
}

}  // namespace lutmm::cli
