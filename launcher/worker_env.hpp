#pragma once

#include <string>

#include "launcher/environment.hpp"
#include "launcher/launch_plan.hpp"

namespace xlaunch::launcher {

/// Per-worker paths that the environment points at.
struct WorkerPaths {
  std::string error_file;  // TORCHELASTIC_ERROR_FILE
  std::string run_dir;     // XLAUNCH_LOG_DIR
};

/// The environment of one worker: the launcher's own, plus torchrun's full set, accelerate's
/// ACCELERATE_MIXED_PRECISION and xlaunch's XLAUNCH_* variables. Pure.
/// OMP_NUM_THREADS is set to 1 with several workers unless the parent set it
/// (omp_threads_defaulted).
Environment worker_environment(const Environment& parent, const LaunchPlan& plan, int local_rank,
                               int restart_count, const WorkerPaths& paths);

/// torchrun's part that depends on its flags (worker_environment calls it last): ROLE_NAME
/// from --role, TORCH_NCCL_ASYNC_ERROR_HANDLING=1 and NCCL_ASYNC_ERROR_HANDLING=1 unless the
/// parent set them, and --virtual_local_rank (LOCAL_RANK=0, CUDA_VISIBLE_DEVICES its own GPU).
void add_torchrun_env(Environment& env, const Environment& parent, const LaunchPlan& plan,
                      int local_rank);

/// True when worker_environment sets OMP_NUM_THREADS itself (the launcher says so once): as
/// torchrun, only where several workers share the machine and the parent did not set it.
bool omp_threads_defaulted(const Environment& parent, const LaunchPlan& plan);

}  // namespace xlaunch::launcher
