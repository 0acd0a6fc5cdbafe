#include <unistd.h>

#include "cli/commands.hpp"
#include "diagnose/stacks_registry.hpp"
#include "launcher/environment.hpp"

namespace xlaunch::cli {

void add_stacks_command(CLI::App& app, Action& run) {
  auto run_id = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "stacks", "Print every rank's Python stacks of a running job (docs/diagnose.md)");
  cmd->add_option("RUN_ID", *run_id, "The job's run id (default: the only job running)");
  cmd->callback([cmd, run_id, &run] {
    run = [run_id] {
      const std::string dir = diagnose::registry_dir(launcher::current_environment(), ::getuid());
      return diagnose::ask_for_stacks(
          dir, run_id->empty() ? std::nullopt : std::optional<std::string>(*run_id),
          std::chrono::seconds(15));
    };
  });
}

}  // namespace xlaunch::cli
