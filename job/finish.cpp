#include "job/finish.hpp"

#include <fmt/format.h>

#include <optional>

#include "launcher/console.hpp"
#include "launcher/exit_status.hpp"
#include "launcher/program.hpp"
#include "launcher/report.hpp"
#include "launcher/torch_hint.hpp"
#include "report/run_report.hpp"

namespace xlaunch::job {

using namespace launcher;

namespace {

// The closing line: success, or the exit code with the failure's root cause.
void say_outcome(const LaunchPlan& plan, const RunFiles& files, const Outcome& outcome) {
  const RunSummary& summary = outcome.summary;
  if (summary.exit_code == exit_status::kSuccess) {
    // Logs in a temporary folder are kept (--redirects without --log_dir): say where.
    const std::string logs =
        files.logs_in_temp() ? fmt::format(" (logs: {})", files.run_dir()) : "";
    if (plan.local_world_size == 1) {
      say("xlaunch: the worker finished successfully{}\n", logs);
    } else {
      say("xlaunch: all {} workers finished successfully{}\n", plan.local_world_size, logs);
    }
  } else if (summary.interrupted_by &&
             summary.exit_code == exit_status::kSignalBase + *summary.interrupted_by) {
    // Stopped by a signal to the launcher (Ctrl-C, SIGTERM from a scheduler), on this
    // machine or, through the join, on another.
    say("xlaunch: job stopped by {}; exit code {}{}\n", signal_name(*summary.interrupted_by),
        summary.exit_code, files.keeps_output() ? fmt::format(" (logs: {})", files.run_dir()) : "");
  } else if (outcome.job_failure) {
    say("xlaunch: exit code {}{}\n", summary.exit_code,
        files.keeps_output() ? fmt::format(" (logs: {})", files.run_dir()) : "");
  } else if (summary.root_cause) {
    say("xlaunch: job failed: rank {} {}; exit code {}{}\n", summary.root_cause->worker.rank,
        describe_end(summary.root_cause->worker), summary.exit_code,
        files.keeps_output() ? fmt::format(" (logs: {})", files.run_dir()) : "");
  }
}

// Shows what the console still has queued, waiting a little at most: a console that stopped
// reading must not keep a finished job from exiting. What it never showed is logged.
void finish_console(RunFiles& files) {
  console_drain(std::chrono::seconds(2));
  const ConsoleStats stats = console_stats();
  if (stats.dropped_lines > 0) {
    files.log(
        fmt::format("console: {} lines not shown because the console did not keep up "
                    "(every line is in the rank logs)",
                    stats.dropped_lines));
  }
  if (stats.out_closed || stats.err_closed) {
    files.log(fmt::format("console: {} closed during the run; {} lines not shown",
                          stats.out_closed && stats.err_closed ? "stdout and stderr"
                          : stats.out_closed                   ? "stdout"
                                                               : "stderr",
                          stats.lost_lines));
  }
}

// Ranks that died at once of "No module named 'torch'" most often ran the wrong Python.
void hint_if_torch_missing(const Job& job, const RunSummary& summary) {
  if (!summary.root_cause || !runs_under_python(job.request.program)) return;
  if (!failed_importing_torch(*summary.root_cause)) return;
  const std::string& ran = job.plan.argv.at(0);
  say("{}", torch_missing_hint(ran, find_python_with_torch(job.parent_env, ran)));
}

}  // namespace

int finish(const Job& job, RunFiles& files, const Outcome& outcome) {
  const RunSummary& summary = outcome.summary;
  hint_if_torch_missing(job, summary);
  if (summary.exit_code != exit_status::kSuccess) files.keep();
  for (const LogCut& cut : summary.log_cuts) files.log(describe_log_cut(cut));
  std::optional<std::string> no_summary;
  try {
    files.write_summary(summary_json(summary));
  } catch (const std::exception& e) {
    no_summary = e.what();
    say("xlaunch: warning: could not write summary.json: {}\n", e.what());
    files.log(fmt::format("could not write summary.json: {}", e.what()));
  }
  files.log(fmt::format("exit code {}", summary.exit_code));
  if (files.keeps_output() && no_summary) {
    // The report is drawn from summary.json: say why it is missing, not "not a run folder".
    say("xlaunch: warning: no report.html: it is drawn from summary.json, which could not be "
        "written ({})\n",
        *no_summary);
  } else if (files.keeps_output()) {  // the run's picture, beside its logs
    try {
      say("xlaunch: report: {}\n", report::write_run_report(files.run_dir()));
    } catch (const std::exception& e) {
      say("xlaunch: warning: could not write report.html: {}\n", e.what());
    }
  }
  say_outcome(job.plan, files, outcome);
  finish_console(files);
  return summary.exit_code;
}

}  // namespace xlaunch::job
