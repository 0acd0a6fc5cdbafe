// What runs where. Fills in the job's cluster, settings, NVML session, GPUs and plan, and
// decides how the machines meet; checks what can be checked before anything is started.
#pragma once

#include "job/job_state.hpp"

namespace xlaunch::job {

/// Throws UsageError for a bad request (exit 2), LaunchError for a program that cannot run.
void plan_job(Job& job);

/// Warns when --mixed_precision bf16 runs on a selected GPU older than compute capability 8.0.
void warn_if_bf16_unsupported(const Job& job);

}  // namespace xlaunch::job
