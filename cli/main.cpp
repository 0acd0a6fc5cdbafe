#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <exception>
#include <iterator>
#include <string_view>
#include <vector>

#include "cli/commands.hpp"
#include "cli/flag_groups.hpp"
#include "cli/test_command.hpp"
#include "config/argparse_words.hpp"
#include "config/usage_error.hpp"
#include "job/early_start.hpp"
#include "launcher/console.hpp"
#include "launcher/default_python.hpp"
#include "launcher/exit_status.hpp"
#include "launcher/launch_error.hpp"
#include "launcher/process.hpp"

// Parses, dispatches, and maps every error to one exit code in one place (CLI11_PARSE
// is not used: its own error handling would bypass ours).
namespace {

// A subcommand whose flags are the same whatever the command line says.
template <void (*add)(CLI::App&, xlaunch::cli::Action&)>
void whatever_words(CLI::App& app, xlaunch::cli::Action& run, xlaunch::cli::Words) {
  add(app, run);
}

// `args` (the subcommand's name first) as argparse reads them (config/argparse_words.hpp).
std::vector<std::string> argparse_spelling_of(const CLI::App& sub,
                                              const std::vector<std::string>& args) {
  std::vector<std::string> spelt{args.front()};
  const std::vector<std::string> words(args.begin() + 1, args.end());
  for (std::string& word : xlaunch::config::argparse_spelling(words, xlaunch::cli::flags_of(sub))) {
    spelt.push_back(std::move(word));
  }
  return spelt;
}

int dispatch(int argc, char** argv) {
  using namespace xlaunch;
  CLI::App app{"xlaunch: launch distributed training jobs (torchrun/accelerate compatible)",
               "xlaunch"};
  app.require_subcommand(1);
  app.set_version_flag("--version", XLAUNCH_VERSION);
  // A flag given twice takes its last value, as argparse does in torchrun and accelerate
  // (wrappers run "$COMMON --nproc_per_node 8"). Set before any subcommand: they inherit it.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);

  // Building a subcommand's options is most of xlaunch's start-up (CLI11 checks each new
  // name against every one before it: ~8 ms for all of them), so only the subcommand named
  // first is built; top-level help and a misspelt name get them all.
  struct Command {
    std::string_view name;
    void (*add)(CLI::App&, cli::Action&, cli::Words);
  };
  static constexpr Command kCommands[] = {
      {"launch", cli::add_launch_command},
      {"config", whatever_words<cli::add_config_command>},
      {"store", whatever_words<cli::add_store_command>},
      {"test", cli::add_test_command},
      {"env", whatever_words<cli::add_env_command>},
      {"stacks", whatever_words<cli::add_stacks_command>},
      {"report", whatever_words<cli::add_report_command>},
  };
  cli::Action run;
  const std::string_view first = argc > 1 ? argv[1] : "";
  const auto named = std::find_if(std::begin(kCommands), std::end(kCommands),
                                  [&](const Command& c) { return c.name == first; });
  std::vector<std::string> args(argv + 1, argv + argc);  // what CLI11 parses
  if (named != std::end(kCommands)) {
    const std::vector<std::string_view> words(argv + 2, argv + argc);
    if (named->name == "launch") job::start_helpers_early(words);
    named->add(app, run, words);
    args = argparse_spelling_of(*app.get_subcommand(std::string(named->name)), args);
  } else {
    for (const Command& command : kCommands) command.add(app, run, std::nullopt);
  }

  try {
    std::reverse(args.begin(), args.end());  // CLI11 takes the words last first
    app.parse(std::move(args));
    return run ? run() : exit_status::kSuccess;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    xlaunch::launcher::say(
        "xlaunch: error: {}\nhint: run 'xlaunch {}--help' for every flag\n", e.what(),
        app.get_subcommands().empty() ? "" : app.get_subcommands().front()->get_name() + " ");
    return exit_status::kUsageError;
  } catch (const launcher::LaunchError& e) {
    xlaunch::launcher::say("xlaunch: error: {}\n", e.what());
    if (!e.hint().empty()) xlaunch::launcher::say("hint: {}\n", e.hint());
    return e.exit_code();
  } catch (const UsageError& e) {
    xlaunch::launcher::say("xlaunch: error: {}\n", e.what());
    if (!e.hint().empty()) xlaunch::launcher::say("hint: {}\n", e.hint());
    return exit_status::kUsageError;
  } catch (const std::exception& e) {
    xlaunch::launcher::say("xlaunch: error: {}\n", e.what());
    return exit_status::kFailure;
  }
}

}  // namespace

int main(int argc, char** argv) {
  xlaunch::launcher::remember_invocation(argc > 0 ? argv[0] : nullptr);
  xlaunch::launcher::reserve_standard_fds();
  xlaunch::launcher::restore_default_sigchld();
  const int code = dispatch(argc, argv);
  xlaunch::job::end_unused_helpers();
  // Errors go through the launcher's console, which never blocks: show what it holds.
  xlaunch::launcher::console_drain(std::chrono::seconds(2));
  return code;
}
