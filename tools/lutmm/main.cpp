// The `lutmm` command: one subcommand per file in this folder, dispatched here.
#include <exception>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "cli.hpp"
#include "tune_cmd.hpp"

int main(int argc, char** argv) {
  using namespace lutmm::cli;
  CLI::App app{"lutmm: matrix multiplication with lookup-table-quantized weights", "lutmm"};
  app.set_version_flag("--version", std::string(lutmm::version()));
  app.require_subcommand(1);
  app.fallthrough(false);

  const std::vector<Command> commands = {add_info(app),       add_quantize(app), add_shapes(app),
                                         add_configs(app),    add_precompile(app), add_bench(app),
                                         add_verify(app),     add_demo(app),     add_tune(app),
                                         add_compare(app)};
  // CLI11 would only say "a subcommand is required" for `lutmm frobnicate`; name the word instead.
  if (argc > 1 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const Command& command : commands) {
      known |= command.app->get_name() == argv[1];
      names += (names.empty() ? "" : ", ") + command.app->get_name();
    }
    if (!known) {
      fmt::print(stderr, "lutmm: usage error: unknown command '{}'; the commands are {}\n", argv[1], names);
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    fmt::print(stderr, "lutmm: usage error: {}\nRun 'lutmm --help' (or 'lutmm <command> --help') for usage.\n",
               e.what());
    return 2;
  }

  for (const Command& command : commands) {
    if (!command.app->parsed()) continue;
    try {
      return command.run();
    } catch (const UsageError& e) {
      fmt::print(stderr, "lutmm {}: usage error: {}\n", command.app->get_name(), e.what());
      return 2;
    } catch (const lutmm::Error& e) {
      fmt::print(stderr, "{}\n", e.what());  // the message already starts with "lutmm: "
      return 1;
    } catch (const std::exception& e) {
      fmt::print(stderr, "lutmm {}: unexpected failure: {}\n", command.app->get_name(), e.what());
      return 1;
    }
  }
  return 2;  // unreachable: require_subcommand(1) made CLI11 reject a missing subcommand
}
