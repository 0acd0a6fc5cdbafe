// The step that runs the workers: announces the run in its folder, then supervises the
// attempts (launcher/supervisor.hpp) with the join's hooks, and tears down what served them.
#pragma once

#include <optional>

#include "job/job_state.hpp"
#include "launcher/failure_record.hpp"
#include "launcher/report.hpp"
#include "launcher/run_files.hpp"

namespace xlaunch::job {

/// How the run ended.
struct Outcome {
  launcher::RunSummary summary;
  /// With several machines: the job's failure of the last attempt, as the join decided it.
  std::optional<launcher::FailureRecord> job_failure;
};

/// Logs what the run is in its folder and prints the run line and the command; makes the
/// launcher the subreaper of orphaned descendants.
void announce_run(Job& job, launcher::RunFiles& files);

/// Runs the attempts until the job ends, then stops the join's monitor, the store and the
/// GPU sampling. `held` (the stop signals held since the run folder was made) is released
/// once the supervisor's handlers exist. Throws LaunchError when the join ends the launch.
Outcome supervise(Job& job, launcher::RunFiles& files,
                  std::optional<launcher::StopSignalsHeld>& held);

}  // namespace xlaunch::job
