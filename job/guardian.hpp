// The step that starts orphan containment: the guardian process (launcher/process.hpp).
#pragma once

#include "job/job_state.hpp"

namespace xlaunch::job {

/// Starts the job's guardian as XLAUNCH_CONTAINMENT asks. Call before any thread exists.
/// Throws UsageError (exit 2) for a bad value or a forced mechanism that is not available.
void start_guardian(Job& job);

}  // namespace xlaunch::job
