// accelerate's environment contract: the variables `accelerate launch` exports to its workers
// for a config file and flags, so that a script calling Accelerator() trains the same way
// under `xlaunch launch`. Pure; every row is in docs/config.md and in accelerate_env_test.cpp.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "config/accelerate_keys.hpp"
#include "config/env_settings.hpp"
#include "config/settings.hpp"

namespace xlaunch::config {

/// What the contract depends on.
struct AccelerateLaunch {
  AccelerateArgs args;     ///< accelerate launch arguments given by the file and the flags
  bool use_cpu = false;    ///< use_cpu / --cpu
  bool debug = false;      ///< debug / --debug
  bool multi_gpu = false;  ///< the job runs as MULTI_GPU (accelerate's multi-GPU launcher)
  MixedPrecision mixed_precision = MixedPrecision::No;
  int local_processes = 1;  ///< workers on this machine
};

/// The launch inputs of merged settings whose distributed type resolved to `type`, with
/// `local_processes` workers on this machine. Throws
/// UsageError (exit 2) for contradictions accelerate refuses too: two training paradigms at
/// once, fsdp_cpu_ram_efficient_loading without fsdp_sync_module_states.
AccelerateLaunch accelerate_launch(const Settings& settings, DistributedType type,
                                   int local_processes);

/// The variables accelerate exports for `launch` (name -> value). Added to every worker's
/// environment; an empty CUDA_VISIBLE_DEVICES hides the GPUs of a use_cpu job.
std::map<std::string, std::string> accelerate_environment(const AccelerateLaunch& launch);

/// accelerate's default config file: $HF_HOME/accelerate/default_config.yaml, else
/// ${XDG_CACHE_HOME:-$HOME/.cache}/huggingface/accelerate/default_config.yaml (accelerate
/// reads no variable naming the file itself). nullopt when neither HF_HOME nor HOME is set.
std::optional<std::string> accelerate_default_config_path(const Getenv& getenv);

}  // namespace xlaunch::config
