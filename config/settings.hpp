// The launch settings one source (built-in defaults, config file, environment, flags)
// provides. Every field is optional: absent means "this source says nothing".
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace xlaunch::config {

/// Local workers one xlaunch runs at most. Far above any GPU count (one worker per GPU) and
/// above one worker per core on nearly every machine; more is almost always a typo, and
/// each worker costs the launcher a process, pipes and log files.
inline constexpr int kMaxLocalWorkers = 1024;

/// accelerate's distributed_type values. MULTI_GPU is DDP: one process per GPU.
enum class DistributedType { No, MultiGpu, DataParallel, MultiCpu };

/// accelerate's mixed_precision values.
enum class MixedPrecision { No, Fp16, Bf16, Fp8 };

/// What one source says about a launch. Field names are the YAML keys.
struct Settings {
  std::optional<std::string> compute_environment;
  std::optional<DistributedType> distributed_type;
  std::optional<MixedPrecision> mixed_precision;
  std::optional<int> num_processes;   // total across machines (accelerate's meaning)
  std::optional<int> nproc_per_node;  // per machine (torchrun's meaning)
  std::optional<int> num_machines;    // MAX of an elastic MIN:MAX
  std::optional<int> machine_rank;
  std::optional<std::string> main_process_ip;
  std::optional<int> main_process_port;
  std::optional<std::string> gpu_ids;  // "all" or "1,3"
  std::optional<std::string> rdzv_backend;
  std::optional<std::string> rdzv_id;
  std::optional<bool> same_network;
  std::optional<bool> use_cpu;
  std::optional<bool> debug;
  std::optional<std::string> log_dir;
  std::optional<int> max_restarts;
  std::optional<double> term_timeout;       // seconds between SIGTERM and SIGKILL
  std::optional<double> rdzv_timeout;       // seconds
  std::optional<double> heartbeat_timeout;  // seconds
  std::optional<std::string> tee;           // torchrun's --tee / --redirects value
  std::optional<std::string> redirects;
  std::optional<std::string> local_ranks_filter;  // "0" or "0,2"
  std::optional<std::string> python;              // interpreter for .py programs
  std::optional<std::string> bind_addr;
  /// accelerate launch arguments (FSDP, DeepSpeed, dynamo...; config/accelerate_keys.hpp).
  std::map<std::string, std::string> accelerate;

  // torchrun's flags (docs/launch.md, "torchrun's flags").
  /// --nnodes MIN:MAX (N means N:N). num_machines is set too when MIN == MAX.
  std::optional<int> min_machines;
  std::optional<int> max_machines;
  /// --nproc_per_node auto|gpu|cpu: counted at launch from the GPUs / CPUs found.
  std::optional<std::string> nproc_per_node_device;
  /// --rdzv_endpoint host[:port] as given; apply_rdzv_endpoint() maps it onto
  /// main_process_ip / main_process_port.
  std::optional<std::string> rdzv_endpoint;
  /// --rdzv_conf keys (join_timeout and timeout land in rdzv_timeout).
  std::optional<double> rdzv_last_call_timeout;  // seconds; used by elastic rounds
  std::optional<double> rdzv_close_timeout;      // seconds; used by elastic rounds
  std::optional<double> rdzv_read_timeout;       // seconds
  std::optional<bool> rdzv_is_host;              // this launcher hosts the store
  /// Set by apply_launch_rules, by no source: machine 0 only because --rdzv_endpoint names
  /// this machine (no is_host, no --node_rank). Such a launcher joins as a client when
  /// another launcher of the job already holds the port (torchrun's c10d does the same).
  std::optional<bool> rdzv_host_guessed;
  std::optional<std::string> role;               // ROLE_NAME of the workers
  std::optional<std::string> local_addr;         // this machine's address for the others
  std::optional<std::string> signals_to_handle;  // "SIGTERM,SIGINT,..." as normalised
  std::optional<bool> virtual_local_rank;        // LOCAL_RANK=0, one GPU visible per worker
  std::optional<std::string> numa_binding;       // accepted, checked, not applied
  // Stall detection and Python stacks (docs/diagnose.md).
  std::optional<double> stall_timeout;  // seconds; 0 turns detection off
  std::optional<std::string> on_stall;  // "continue" or "stop"
  std::optional<bool> python_stacks;    // ship the faulthandler sitecustomize to Python workers
  // Time to first step (docs/launch.md).
  std::optional<std::string> preload;  // "torch,numpy": modules a template imports once
};

/// Field by field, `high` wins where it says something; otherwise `low` is kept.
Settings merge(const Settings& low, const Settings& high);

std::string_view to_string(DistributedType type);      // "NO", "MULTI_GPU", "DP", "MULTI_CPU"
std::string_view to_string(MixedPrecision precision);  // "no", "fp16", "bf16", "fp8"
/// Accepts accelerate's spellings (and DDP for MULTI_GPU), case-insensitively.
std::optional<DistributedType> parse_distributed_type(std::string_view text);
std::optional<MixedPrecision> parse_mixed_precision(std::string_view text);

}  // namespace xlaunch::config
