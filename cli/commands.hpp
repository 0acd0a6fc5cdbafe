// One function per subcommand: it declares the subcommand's flags on `app` and sets
// `run` to the action that calls the library. No logic lives here.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <optional>
#include <span>
#include <string_view>

namespace xlaunch::cli {

/// What the chosen subcommand does once parsing succeeded; returns the exit code.
using Action = std::function<int()>;

/// The words after the subcommand's name, for one that declares only what they may use;
/// nullopt when every subcommand is built (top-level help, a misspelt name).
using Words = std::optional<std::span<const std::string_view>>;

/// `xlaunch launch [OPTIONS] PROGRAM [ARGS...]` (cli/launch_command.cpp).
void add_launch_command(CLI::App& app, Action& run, Words words);
/// `xlaunch config [default|show]`: the wizard and the config file (cli/config_command.cpp).
void add_config_command(CLI::App& app, Action& run);
/// `xlaunch store serve`: the rendezvous store on its own (cli/store_command.cpp).
void add_store_command(CLI::App& app, Action& run);

/// `xlaunch stacks [RUN_ID]`: a running job's Python stacks (cli/stacks_command.cpp).
void add_stacks_command(CLI::App& app, Action& run);

/// `xlaunch report RUN_DIR`: the run's picture as HTML (cli/report_command.cpp).
void add_report_command(CLI::App& app, Action& run);

/// `xlaunch env`: what a bug report needs (cli/env_command.cpp).
void add_env_command(CLI::App& app, Action& run);

}  // namespace xlaunch::cli
