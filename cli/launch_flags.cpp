#include "cli/launch_flags.hpp"

#include <fmt/core.h>

#include <cstdlib>

#include "config/flag_settings.hpp"
#include "config/resolve.hpp"
#include "config/usage_error.hpp"

namespace xlaunch::cli {
namespace {

// Each config key a launch flag sets: its flag names (accelerate's first, torchrun's
// aliases after), help with the default, and the --help group.
struct KeyFlag {
  const char* key;
  const char* names;
  const char* help;
  const char* group;
  bool is_switch = false;
};

constexpr const char* kLaunch = "Launch";
constexpr const char* kMachines = "Machines and store";
constexpr const char* kSupervision = "Supervision and logs";

const KeyFlag kKeyFlags[] = {
    {"num_processes", "--num_processes",
     "Workers in the whole job (default: one per selected GPU, else 1)", kLaunch},
    {"nproc_per_node", "--nproc_per_node",
     "Workers per machine (torchrun's meaning; on one machine the same)", kLaunch},
    {"gpu_ids", "--gpu_ids",
     "GPUs to use, as indices into the GPUs this launcher sees (e.g. 1,3) or 'all'", kLaunch},
    {"use_cpu", "--use_cpu,--cpu", "Run CPU workers even when GPUs are present", kLaunch, true},
    {"distributed_type", "--distributed_type", "NO, MULTI_GPU (DDP), DP or MULTI_CPU", kLaunch},
    {"mixed_precision", "--mixed_precision",
     "no, fp16, bf16 or fp8 (passed to workers as ACCELERATE_MIXED_PRECISION)", kLaunch},
    {"python", "--python",
     "Interpreter for .py programs and -m (default: $XLAUNCH_PYTHON, else python3)", kLaunch},
    {"num_machines", "--num_machines,--nnodes", "Machines in the job (default 1)", kMachines},
    {"machine_rank", "--machine_rank,--node_rank", "This machine's rank (default 0)", kMachines},
    {"main_process_ip", "--main_process_ip,--master_addr",
     "Address of machine 0's store (default 127.0.0.1)", kMachines},
    {"main_process_port", "--main_process_port,--master_port",
     "Port of the store (default 0: a free port; 29500 with several machines)", kMachines},
    {"rdzv_backend", "--rdzv_backend",
     "static or c10d (xlaunch's store), etcd or etcd-v2 (an etcd cluster at "
     "--main_process_ip:port)",
     kMachines},
    {"rdzv_id", "--rdzv_id,--run_id", "Run id (default: date-time and random hex)", kMachines},
    {"rdzv_timeout", "--rdzv_timeout", "Seconds to wait for every machine (default 900)",
     kMachines},
    {"heartbeat_timeout", "--heartbeat_timeout",
     "Seconds without a heartbeat before a machine is declared lost (default 30)", kMachines},
    {"bind_addr", "--bind_addr", "Address the store listens on", kMachines},
    {"max_restarts", "--max_restarts",
     "Restart every worker this many times after a failure (default 0)", kSupervision},
    {"term_timeout", "--term_timeout",
     "Seconds between SIGTERM and SIGKILL when stopping workers (default 10)", kSupervision},
    {"log_dir", "--log_dir",
     "Folder for a per-run folder of per-rank logs, xlaunch.log and summary.json", kSupervision},
    {"local_ranks_filter", "--local_ranks_filter",
     "Show only these local ranks on the console, e.g. 0 or 0,2 (logs keep all)", kSupervision},
    {"redirects", "--redirects",
     "Streams kept off the console (log files only): 0 none, 1 stdout, 2 stderr, 3 both, or "
     "per local rank like 0:3,1:2",
     kSupervision},
    {"tee", "--tee", "Accepted for torchrun compatibility: console and files is the default",
     kSupervision},
    {"debug", "--debug", "Accepted for accelerate compatibility", kSupervision, true},
};

}  // namespace

void add_launch_flags(CLI::App& cmd, LaunchFlags& flags) {
  for (const KeyFlag& f : kKeyFlags) {
    std::string& target = flags.raw[f.key];
    if (f.is_switch) {
      cmd.add_flag(std::string(f.names) + "{true}", target, f.help)->group(f.group);
    } else {
      cmd.add_option(f.names, target, f.help)->group(f.group);
    }
  }
  cmd.add_flag("--multi_gpu", flags.multi_gpu, "Same as --distributed_type MULTI_GPU")
      ->group(kLaunch);
  cmd.add_option("--config_file", flags.config_file, "YAML config to read (default: see docs)")
      ->group(kLaunch);
  cmd.add_flag("-m,--module", flags.module, "Run PROGRAM as a Python module (python -m)")
      ->group(kLaunch);
  cmd.add_flag("--no_python", flags.no_python, "Run PROGRAM as is, without Python")->group(kLaunch);
  cmd.add_flag("--standalone", flags.standalone,
               "One machine, store on a free loopback port (torchrun's flag)")
      ->group(kMachines);

  // PROGRAM and everything after it belong to the worker, unparsed.
  cmd.prefix_command();
}

void finish_launch_flags(CLI::App& cmd, LaunchFlags& flags) {
  std::vector<std::pair<std::string, std::string>> given;
  for (const KeyFlag& f : kKeyFlags) {
    if (cmd.get_option(std::string("--") + f.key)->count() > 0) {
      given.emplace_back(f.key, flags.raw.at(f.key));
    }
  }
  // The config schema parses and checks flags exactly as it does file and env values.
  config::Settings& s = flags.settings;
  s = config::settings_from_flags(given);
  if (flags.multi_gpu) s.distributed_type = config::DistributedType::MultiGpu;
  if (flags.standalone) {
    if (s.num_machines && *s.num_machines != 1) {
      throw UsageError("--standalone runs on one machine, but --num_machines is " +
                       std::to_string(*s.num_machines));
    }
    s.num_machines = 1;
    s.main_process_port = 0;
  }
}

config::Settings resolve_launch_settings(const LaunchFlags& flags) {
  config::Resolved resolved = config::resolve(
      flags.settings, flags.config_file, [](const std::string& name) -> std::optional<std::string> {
        const char* value = std::getenv(name.c_str());
        if (value == nullptr) return std::nullopt;
        return std::string(value);
      });
  for (const std::string& notice : resolved.notices) {
    fmt::print(stderr, "xlaunch: note: {}\n", notice);
  }
  return resolved.settings;
}

}  // namespace xlaunch::cli
