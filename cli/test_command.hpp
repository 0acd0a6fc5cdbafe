// `xlaunch test` (cli/test_command.cpp). Declared here rather than in commands.hpp so the
// client engineer could add it without touching files another engineer was editing;
// main.cpp registers it with add_test_command(app, run, words).
#pragma once

#include "cli/commands.hpp"

namespace xlaunch::cli {

/// `xlaunch test [launch flags] [--backend auto|nccl|gloo]`: launches xlaunch-selftest
/// (beside this binary) on the configured processes, prints a per-rank pass/fail table,
/// and returns non-zero when any rank failed or reported nothing.
void add_test_command(CLI::App& app, Action& run, Words words);

}  // namespace xlaunch::cli
