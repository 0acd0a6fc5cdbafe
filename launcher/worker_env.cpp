#include "launcher/worker_env.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace xlaunch::launcher {

void add_torchrun_env(Environment& env, const Environment& parent, const LaunchPlan& plan,
                      int local_rank) {
  env["ROLE_NAME"] = plan.role;
  // torchrun turns on NCCL's async error handling, so a rank stuck in a collective after a
  // peer died raises instead of hanging; the older name is for PyTorch before 2.2.
  for (const char* name : {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "NCCL_ASYNC_ERROR_HANDLING"}) {
    if (!parent.contains(name)) env[name] = "1";
  }
  if (plan.virtual_local_rank) {
    // Each worker sees only its own GPU, as cuda:0.
    env["LOCAL_RANK"] = "0";
    if (local_rank < static_cast<int>(plan.gpus.size())) {
      env["CUDA_VISIBLE_DEVICES"] = plan.gpus[local_rank];
    }
  }
}

bool omp_threads_defaulted(const Environment& parent, const LaunchPlan& plan) {
  // One worker keeps every core, as `python train.py` would.
  return plan.local_world_size > 1 && !parent.contains("OMP_NUM_THREADS");
}

Environment worker_environment(const Environment& parent, const LaunchPlan& plan, int local_rank,
                               int restart_count, const WorkerPaths& paths) {
  Environment env = parent;
  // An outer run's preloaded rank may be this launcher's parent: its template is not ours
  // (ours, with --preload, tells its own ranks).
  env.erase("XLAUNCH_PRELOAD_TEMPLATE");
  const std::string rank = std::to_string(plan.rank_offset + local_rank);
  const std::string world_size = std::to_string(plan.world_size);
  env["RANK"] = rank;
  env["LOCAL_RANK"] = std::to_string(local_rank);
  env["GROUP_RANK"] = std::to_string(plan.machine_rank);
  env["ROLE_RANK"] = rank;
  env["ROLE_NAME"] = "default";
  env["LOCAL_WORLD_SIZE"] = std::to_string(plan.local_world_size);
  env["WORLD_SIZE"] = world_size;
  env["GROUP_WORLD_SIZE"] = std::to_string(plan.num_machines);
  env["ROLE_WORLD_SIZE"] = world_size;
  env["MASTER_ADDR"] = plan.master_addr;
  env["MASTER_PORT"] = std::to_string(plan.master_port);
  env["TORCHELASTIC_RESTART_COUNT"] = std::to_string(restart_count);
  env["TORCHELASTIC_MAX_RESTARTS"] = std::to_string(plan.max_restarts);
  env["TORCHELASTIC_RUN_ID"] = plan.run_id;
  // The launcher hosts the store, so every rank (rank 0 too) joins it as a client.
  env["TORCHELASTIC_USE_AGENT_STORE"] = "True";
  env["TORCHELASTIC_ERROR_FILE"] = paths.error_file;
  if (omp_threads_defaulted(parent, plan)) env["OMP_NUM_THREADS"] = "1";
  const std::string precision(config::to_string(plan.mixed_precision));
  env["ACCELERATE_MIXED_PRECISION"] = precision;
  env["XLAUNCH_MIXED_PRECISION"] = precision;
  env["XLAUNCH_DISTRIBUTED_TYPE"] = std::string(config::to_string(plan.distributed_type));
  env["XLAUNCH_RUN_ID"] = plan.run_id;
  env["XLAUNCH_LOG_DIR"] = paths.run_dir;
  // Python children of the worker flush as they print, like the worker itself (-u).
  env["PYTHONUNBUFFERED"] = "1";
  if (!plan.gpus.empty())
    env["CUDA_VISIBLE_DEVICES"] = fmt::format("{}", fmt::join(plan.gpus, ","));

  // accelerate's environment contract (config/accelerate_env.hpp, docs/config.md): FSDP,
  // DeepSpeed, Megatron-LM, dynamo, fp8, CPU threads and use_cpu, as `accelerate launch` sets.
  for (const auto& [name, value] : config::accelerate_environment(plan.accelerate)) {
    env[name] = value;
  }
  add_torchrun_env(env, parent, plan, local_rank);
  return env;
}

}  // namespace xlaunch::launcher
