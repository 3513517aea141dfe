#pragma once
// `lutmm tune` and the measured column of `lutmm configs` (tune.cpp).
#include <vector>

#include "cli.hpp"

namespace lutmm::cli {

Command add_tune(CLI::App& parent);

// Times every config of `configs` for p on the current GPU with the tuner's timing function (median of
// `repetitions` L2-cold runs) and prints them fastest first, marking the heuristic's choice and the tuning
// database's. Returns false when not one config could be timed.
bool print_config_timings(const Problem& p, const std::vector<KernelConfig>& configs, const KernelConfig& heuristic,
                          int repetitions);

}  // namespace lutmm::cli
