// The last step of a launch: the run's record (summary.json, xlaunch.log, report.html), the
// closing line on the console, and what the console still has queued.
#pragma once

#include "job/job_state.hpp"
#include "job/supervise.hpp"
#include "launcher/run_files.hpp"

namespace xlaunch::job {

/// Writes the run's record and says how it ended; returns the exit code (docs/launch.md).
int finish(const Job& job, launcher::RunFiles& files, const Outcome& outcome);

}  // namespace xlaunch::job
