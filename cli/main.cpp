#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "cli/commands.hpp"
#include "cli/test_command.hpp"
#include "config/usage_error.hpp"
#include "launcher/console.hpp"
#include "launcher/exit_status.hpp"
#include "launcher/launch_error.hpp"
#include "launcher/process.hpp"

// Parses, dispatches, and maps every error to one exit code in one place (CLI11_PARSE
// is not used: its own error handling would bypass ours).
namespace {

int dispatch(int argc, char** argv) {
  using namespace xlaunch;
  CLI::App app{"xlaunch: launch distributed training jobs (torchrun/accelerate compatible)",
               "xlaunch"};
  app.require_subcommand(1);
  app.set_version_flag("--version", XLAUNCH_VERSION);

  cli::Action run;
  cli::add_launch_command(app, run);
  cli::add_config_command(app, run);
  cli::add_store_command(app, run);
  cli::add_test_command(app, run);
  cli::add_env_command(app, run);
  cli::add_stacks_command(app, run);
  cli::add_report_command(app, run);

  try {
    app.parse(argc, argv);
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
  xlaunch::launcher::reserve_standard_fds();
  const int code = dispatch(argc, argv);
  // Errors go through the launcher's console, which never blocks: show what it holds.
  xlaunch::launcher::console_drain(std::chrono::seconds(2));
  return code;
}
