#include <fmt/core.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/launch_flags.hpp"
#include "config/schema.hpp"
#include "config/usage_error.hpp"
#include "job/launch.hpp"

namespace xlaunch::cli {
namespace {

UsageError unknown_flag(const CLI::App& cmd, const std::string& given) {
  std::string name = given.substr(0, given.find('='));
  std::string best;
  std::size_t best_distance = 3;  // further than this is not a typo
  for (const CLI::Option* option : cmd.get_options()) {
    for (const std::string& known : option->get_lnames()) {
      std::size_t d = config::edit_distance(name, "--" + known);
      if (d < best_distance) best_distance = d, best = "--" + known;
    }
  }
  return UsageError("unknown flag '" + name + "' for 'xlaunch launch'",
                    best.empty()
                        ? "run 'xlaunch launch --help' for every flag"
                        : "did you mean " + best + "? ('xlaunch launch --help' lists every flag)");
}

}  // namespace

void add_launch_command(CLI::App& app, Action& run) {
  auto flags = std::make_shared<LaunchFlags>();
  CLI::App* cmd =
      app.add_subcommand("launch", "Run PROGRAM as N cooperating workers (one per GPU by default)");
  cmd->footer(
      "Usage: xlaunch launch [OPTIONS] PROGRAM [ARGS...]\n"
      "PROGRAM: a .py file (run with Python, unbuffered), a module with -m, or any executable.\n"
      "Exit code: the first failing worker's (128+N for signal N), 2 for usage errors, 130 "
      "after Ctrl-C.\nSee docs/launch.md for every flag, variable and the log layout.");
  add_launch_flags(*cmd, *flags);
  // PROGRAM and its arguments, as one positional list. Having a positional lets "--" end the
  // options (without one, CLI11 hands "--" and all after it back to the top-level parser), and
  // positionals_at_end makes every word after PROGRAM the worker's, even "--num_processes".
  auto command = std::make_shared<std::vector<std::string>>();
  cmd->add_option("PROGRAM", *command, "The program and its arguments, passed on untouched")
      ->allow_extra_args()
      ->type_name("");
  cmd->positionals_at_end();
  cmd->callback([cmd, flags, command, &run] {
    run = [cmd, flags, command] {
      finish_launch_flags(*cmd, *flags);
      // What CLI11 could not place: flags it does not know, and the "--" mark itself.
      std::vector<std::string> stray = cmd->remaining();
      std::erase(stray, "--");
      if (!stray.empty()) throw unknown_flag(*cmd, stray.front());
      const std::vector<std::string>& rest = *command;
      if (rest.empty()) {
        throw UsageError("no program given", "usage: xlaunch launch [OPTIONS] PROGRAM [ARGS...]");
      }
      job::LaunchRequest request;
      request.settings = resolve_launch_settings(*flags);
      request.program.program = rest.front();
      request.program.args.assign(rest.begin() + 1, rest.end());
      request.program.module = flags->module;
      request.program.no_python = flags->no_python;
      if (flags->module && flags->no_python) {
        throw UsageError("-m/--module and --no_python cannot be used together");
      }
      // --python, else XLAUNCH_PYTHON, else the config file's python key (resolve() layers them).
      request.program.python = request.settings.python.value_or("python3");
      return job::launch(request);
    };
  });
}

}  // namespace xlaunch::cli
