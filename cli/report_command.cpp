// `xlaunch report LOG_DIR/RUN_ID`: writes the run's picture (report.html) and prints its path.
#include <fmt/core.h>

#include <string>

#include "cli/commands.hpp"
#include "launcher/exit_status.hpp"
#include "report/run_report.hpp"

namespace xlaunch::cli {

void add_report_command(CLI::App& app, Action& run) {
  auto* cmd = app.add_subcommand(
      "report", "write a run's picture: one self-contained HTML file (lanes per rank and GPU)");
  auto run_dir = std::make_shared<std::string>();
  auto output = std::make_shared<std::string>();
  cmd->add_option("run_dir", *run_dir, "the run's folder, LOG_DIR/RUN_ID (from --log_dir)")
      ->required();
  cmd->add_option("-o,--output", *output, "where to write the page (default RUN_DIR/report.html)");
  cmd->callback([&run, run_dir, output] {
    run = [run_dir, output] {
      // logs/<id>/ (a shell's completion) names the folder as logs/<id> does.
      std::string dir = *run_dir;
      while (dir.size() > 1 && dir.ends_with('/')) dir.pop_back();
      fmt::print("{}\n", report::write_run_report(dir, *output));
      return exit_status::kSuccess;
    };
  });
}

}  // namespace xlaunch::cli
