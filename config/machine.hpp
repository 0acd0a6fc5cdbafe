// What the wizard and `config default` know about this machine. config/ does not query
// hardware itself; the caller fills this in (cli/ uses the launcher's NVML query).
#pragma once

#include <string>
#include <vector>

#include "config/settings.hpp"

namespace xlaunch::config {

struct MachineFacts {
  int gpu_count = 0;                   ///< GPUs this process may use
  std::vector<std::string> gpu_names;  ///< e.g. "NVIDIA H200", for the wizard's intro
};

/// The config `xlaunch config default` writes on this machine: `given` (its --key flags),
/// completed so that the file launches here. Without flags: one machine, DDP over every GPU
/// when there are two or more, a single process on one GPU, or a CPU process without any;
/// mixed precision "no". The defaults follow what was given: several processes or machines
/// run DDP on GPUs, MULTI_CPU without; distributed_type NO or DP one process per machine;
/// MULTI_GPU one per GPU given in gpu_ids. What cannot launch here even so (MULTI_GPU
/// without a GPU) is left as given for the caller's check to refuse.
Settings default_settings(const MachineFacts& machine, const Settings& given = {});

}  // namespace xlaunch::config
