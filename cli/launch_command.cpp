#include <fmt/core.h>
#include <fmt/ranges.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/flag_groups.hpp"
#include "cli/launch_flags.hpp"
#include "config/schema.hpp"
#include "config/usage_error.hpp"
#include "gpu/devices.hpp"
#include "gpu/nvml.hpp"
#include "job/launch.hpp"
#include "launcher/default_python.hpp"
#include "launcher/environment.hpp"
#include "launcher/launch_plan.hpp"
#include "launcher/program.hpp"
#include "launcher/report.hpp"

namespace xlaunch::cli {
namespace {

/// A word where the program goes that is surely a flag's value ("7" in --gpu_ids 6 7 train.py,
/// "false" in --use_cpu false train.py): say what happened rather than "program '7' not found".
void check_program_word(const std::vector<std::string>& rest) {
  const std::string& word = rest.front();
  std::error_code ec;
  if (std::filesystem::exists(word, ec)) return;
  const bool number = !word.empty() && word.find_first_not_of("0123456789,") == std::string::npos;
  const bool boolean = config::parse_boolean(word).has_value() && !number;
  if (!number && !boolean) return;
  std::string next;
  for (std::size_t i = 1; i < rest.size(); ++i) {
    if (rest[i].ends_with(".py") || std::filesystem::exists(rest[i], ec)) {
      next = rest[i];
      break;
    }
  }
  const std::string seems =
      next.empty() ? "" : fmt::format(" (the program seems to be '{}')", next);
  if (number) {
    throw UsageError(
        fmt::format("'{}' stands where the program goes{}: each flag takes exactly one value, "
                    "so a second value after a flag is read as the program",
                    word, seems),
        "write lists with commas, without blanks: --gpu_ids 6,7 train.py");
  }
  throw UsageError(
      fmt::format("'{}' stands where the program goes{}: switches such as --use_cpu take no "
                  "separate value",
                  word, seems),
      fmt::format("write --use_cpu={} (with '='), or just --use_cpu for true", word));
}

/// --dry_run: what a launch would use: the settings as merged ("key: value"), this machine's
/// plan ("plan.x: value") and the worker command. A scheduler's variables (SLURM, ...) are
/// not applied here; the launch itself applies them.
int dry_run(const job::LaunchRequest& request) {
  const launcher::Environment env = launcher::current_environment();
  std::vector<std::string> argv = launcher::resolve_worker_argv(
      request.program, launcher::lookup(env, "PATH").value_or("/usr/bin:/bin"),
      launcher::host_exec_probe());
  const std::string command = fmt::format("{}", fmt::join(argv, " "));
  const auto visible =
      gpu::visible_gpus(launcher::lookup(env, "CUDA_VISIBLE_DEVICES"), gpu::query_nvml());
  const launcher::LaunchPlan plan = launcher::make_plan(request.settings, std::move(argv), visible,
                                                        "random-at-launch", request.sources);
  // Printed once the plan is known to be good: an error leaves stdout empty.
  for (const config::KeySpec& key : config::schema()) {
    if (auto value = key.print(request.settings)) fmt::print("{}: {}\n", key.name, *value);
  }
  // As the launch does: several machines meet on torchrun's port unless one was given.
  const int port = plan.num_machines > 1 && plan.master_port == 0 ? 29500 : plan.master_port;
  fmt::print("plan.processes_per_machine: {}\n", plan.local_world_size);
  fmt::print("plan.machines: {}\n", plan.num_machines);
  fmt::print("plan.machine_rank: {}\n", plan.machine_rank);
  fmt::print("plan.world_size: {}\n", plan.world_size);
  fmt::print("plan.master_addr: {}\n", plan.master_addr);
  fmt::print("plan.master_port: {}{}\n", port, port == 0 ? " (a free port at launch)" : "");
  fmt::print("plan.max_restarts: {}\n", plan.max_restarts);
  fmt::print("plan.run_id: {}\n", plan.run_id);
  fmt::print("plan.gpus: {}\n", plan.gpus.empty() ? "none (CPU workers)"
                                                  : fmt::format("{}", fmt::join(plan.gpus, ",")));
  fmt::print("plan.role: {}\n", plan.role);
  std::vector<std::string> forwarded;
  for (int signal : plan.forwarded_signals) forwarded.push_back(launcher::signal_name(signal));
  fmt::print("plan.forwarded_signals: {}\n",
             forwarded.empty() ? "none" : fmt::format("{}", fmt::join(forwarded, ",")));
  fmt::print("command: {}\n", command);
  return 0;
}

/// "Usage: xlaunch launch [OPTIONS] PROGRAM [ARGS...]" rather than CLI11's "[PROGRAM...]".
class LaunchUsage : public FlagGroupsFormatter {
 public:
  std::string make_usage(const CLI::App*, std::string) const override {
    return "Usage: xlaunch launch [OPTIONS] PROGRAM [ARGS...]\n";
  }
};

}  // namespace

void add_launch_command(CLI::App& app, Action& run, Words words) {
  auto flags = std::make_shared<LaunchFlags>();
  CLI::App* cmd =
      app.add_subcommand("launch", "Run PROGRAM as N cooperating workers (one per GPU by default)");
  cmd->footer(
      "PROGRAM: a .py file (run with Python, unbuffered), a module with -m, or any executable.\n"
      "Exit code: the first failing worker's (128+N for signal N), 2 for usage errors, 130 "
      "after Ctrl-C.\nSee docs/launch.md for every flag, variable and the log layout.");
  cmd->formatter(std::make_shared<LaunchUsage>());
  add_launch_flags(*cmd, *flags, words);
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
      if (!stray.empty()) throw unknown_flag(*cmd, stray.front(), "launch");
      const std::vector<std::string>& rest = *command;
      if (rest.empty()) {
        throw UsageError("no program given", "usage: xlaunch launch [OPTIONS] PROGRAM [ARGS...]");
      }
      // With --no_python the word is the program, found on PATH as any program is.
      if (!flags->no_python) check_program_word(rest);
      job::LaunchRequest request;
      request.settings = resolve_launch_settings(*flags, &request.config_file, &request.sources);
      request.program.program = rest.front();
      request.program.args.assign(rest.begin() + 1, rest.end());
      request.program.module = flags->module;
      request.program.no_python = flags->no_python;
      if (flags->module && flags->no_python) {
        throw UsageError("-m/--module and --no_python cannot be used together");
      }
      // --python, else XLAUNCH_PYTHON, else the config file's python key (resolve() layers them),
      // else the environment's that xlaunch was installed in, or python3 on PATH.
      request.program.python = request.settings.python.value_or(launcher::default_python());
      if (flags->run_path) {
        // torchrun runs the file with runpy in its own Python, whatever the file's name; here
        // the interpreter runs it as a script, which is what the file sees either way.
        request.program.args.insert(request.program.args.begin(), {"-u", rest.front()});
        request.program.program = request.program.python;
        request.program.no_python = true;
        request.program.run_path = true;
      }
      if (flags->dry_run) return dry_run(request);
      return job::launch(request);
    };
  });
}

}  // namespace xlaunch::cli
