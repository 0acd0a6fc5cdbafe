#include "launcher/launch_plan.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "config/launch_rules.hpp"
#include "config/module_list.hpp"
#include "config/schema.hpp"
#include "config/torchrun_values.hpp"
#include "config/usage_error.hpp"
#include "config/validate.hpp"
#include "gpu/devices.hpp"

namespace xlaunch::launcher {

using config::DistributedType;

namespace {

int positive(const std::optional<int>& value, const char* flag, int fallback) {
  if (!value) return fallback;
  if (*value < 1) {
    throw UsageError(fmt::format("{} must be at least 1 (got {})", flag, *value),
                     fmt::format("for example {} 2", flag));
  }
  return *value;
}

int local_process_count(const config::Settings& s, int num_machines, int default_count) {
  if (s.nproc_per_node) return positive(s.nproc_per_node, "--nproc_per_node", 1);
  if (!s.num_processes) return default_count;
  int total = positive(s.num_processes, "--num_processes", 1);
  if (total % num_machines != 0) {
    throw UsageError(
        fmt::format("--num_processes {} does not divide evenly over --num_machines {}", total,
                    num_machines),
        "give a multiple of the machine count, or --nproc_per_node for a per-machine count");
  }
  return total / num_machines;
}

// --rdzv_id, or the generated id.
void set_run_id(LaunchPlan& plan, const config::Settings& s, const std::string& run_id) {
  plan.run_id = s.rdzv_id.value_or(run_id);
  // The config schema checks ids from flags, env and files; this also covers settings built
  // in code, since the id becomes a folder name.
  if (!config::is_valid_run_id(plan.run_id)) {
    throw UsageError(
        fmt::format("--rdzv_id: '{}' is not a valid run id", config::printable(plan.run_id)),
        "use 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit");
  }
}

// " (from X)" for a key whose source is known, else nothing.
std::string from(const Sources& sources, const char* key) {
  const auto it = sources.find(key);
  return it == sources.end() ? "" : fmt::format(" (from {})", it->second);
}

void set_machines(LaunchPlan& plan, const config::Settings& s, const Sources& sources) {
  plan.num_machines = positive(s.num_machines, "--num_machines", 1);
  plan.machine_rank = s.machine_rank.value_or(0);
  if (plan.machine_rank < 0 || plan.machine_rank >= plan.num_machines) {
    throw UsageError(fmt::format("--machine_rank {}{} is out of range for --num_machines {}{}",
                                 plan.machine_rank, from(sources, "machine_rank"),
                                 plan.num_machines, from(sources, "num_machines")),
                     fmt::format("machine ranks run from 0 to {}", plan.num_machines - 1));
  }
}

// This machine's worker count: from the flags, else one per selected GPU (DP: one process
// for all of them), checked against the GPUs there are.
int local_workers(const config::Settings& s, const std::vector<std::string>& selected,
                  const std::vector<std::string>& visible_gpus, int num_machines, bool cpu,
                  bool data_parallel, const Sources& sources) {
  int local = 1;
  const int default_count =
      (data_parallel || selected.empty()) ? 1 : static_cast<int>(selected.size());
  if (s.distributed_type == DistributedType::MultiGpu && !cpu && selected.empty()) {
    throw UsageError(
        fmt::format(
            "distributed_type MULTI_GPU{} runs one worker per GPU, but no GPU is visible "
            "(GPUs found: {})",
            from(sources, "distributed_type"),
            visible_gpus.empty() ? "none" : fmt::format("{}", fmt::join(visible_gpus, ","))),
        "check nvidia-smi and CUDA_VISIBLE_DEVICES, or run CPU workers with --cpu "
        "(distributed_type MULTI_CPU)");
  }
  if (s.nproc_per_node_device) {
    // torchrun's --nproc_per_node auto|gpu|cpu, counted here where the GPUs are known.
    if (*s.nproc_per_node_device == "cpu" && !selected.empty()) {
      throw UsageError("--nproc_per_node cpu asks for CPU workers, but this launch uses GPUs",
                       "add --cpu for CPU workers, or use --nproc_per_node gpu");
    }
    local = config::count_for_nproc_device(*s.nproc_per_node_device, selected,
                                           static_cast<int>(std::thread::hardware_concurrency()));
    // The checks a number meets in the launch rules, now that the count is known. (Both
    // keys are left only when one source gave both: the rules drop the weaker.)
    if (s.num_processes && *s.num_processes != local * num_machines) {
      throw config::count_contradiction(*s.num_processes, *s.nproc_per_node_device, num_machines,
                                        local, from(sources, "num_processes"));
    }
    if (s.distributed_type == DistributedType::No && local > 1) {
      throw UsageError(
          fmt::format("distributed_type NO{} runs one process, but nproc_per_node {} is {} "
                      "processes here",
                      from(sources, "distributed_type"), *s.nproc_per_node_device, local),
          "for several processes use --multi_gpu (distributed_type MULTI_GPU) or "
          "distributed_type MULTI_CPU; or ask for 1 process");
    }
  } else {
    local = local_process_count(s, num_machines, default_count);
  }
  if (data_parallel && local != 1) {
    throw UsageError(fmt::format("distributed_type DP runs one process per machine that uses "
                                 "all its GPUs, but {} processes per machine were asked for",
                                 local),
                     "use --num_processes equal to --num_machines, or DDP (MULTI_GPU)");
  }
  return local;
}

// The GPUs the workers get, their count, and the job's ranks.
void set_workers(LaunchPlan& plan, const config::Settings& s,
                 const std::vector<std::string>& visible_gpus, const Sources& sources) {
  const bool cpu = s.use_cpu.value_or(false) || s.distributed_type == DistributedType::MultiCpu;
  const bool data_parallel = s.distributed_type == DistributedType::DataParallel;
  std::vector<std::string> selected;
  if (!cpu) selected = gpu::select_gpus(s.gpu_ids.value_or("all"), visible_gpus);
  if (cpu && s.gpu_ids && *s.gpu_ids != "all") {
    throw UsageError("--gpu_ids was given for a CPU job (--use_cpu or MULTI_CPU)",
                     "drop --gpu_ids, or drop --use_cpu to run on those GPUs");
  }
  plan.local_world_size =
      local_workers(s, selected, visible_gpus, plan.num_machines, cpu, data_parallel, sources);
  if (!data_parallel && static_cast<int>(selected.size()) > plan.local_world_size) {
    selected.resize(plan.local_world_size);  // one GPU per worker; the rest stay untouched
  }
  plan.gpus = selected;
  plan.world_size = plan.local_world_size * plan.num_machines;
  plan.rank_offset = plan.machine_rank * plan.local_world_size;
}

// distributed_type (from the worker count when not given), mixed precision and accelerate's
// launch arguments.
void set_distributed(LaunchPlan& plan, const config::Settings& s) {
  if (s.distributed_type) {
    plan.distributed_type = *s.distributed_type;
  } else if (plan.world_size > 1) {
    plan.distributed_type =
        plan.gpus.empty() ? DistributedType::MultiCpu : DistributedType::MultiGpu;
  }
  plan.mixed_precision = s.mixed_precision.value_or(config::MixedPrecision::No);
  plan.accelerate = config::accelerate_launch(s, plan.distributed_type, plan.local_world_size);
}

// Where the workers find the store, and where it listens.
void set_store_address(LaunchPlan& plan, const config::Settings& s) {
  if (s.main_process_port) {
    if (*s.main_process_port < 0 || *s.main_process_port > 65535) {
      throw UsageError(
          fmt::format("--main_process_port {} is not a TCP port", *s.main_process_port),
          "give 1-65535, or 0 (the default) for a free port");
    }
    plan.master_port = static_cast<std::uint16_t>(*s.main_process_port);
  }
  if (s.main_process_ip && !s.main_process_ip->empty()) plan.master_addr = *s.main_process_ip;
  if (plan.num_machines > 1)
    plan.bind_host = s.bind_addr.value_or("");
  else if (s.bind_addr)
    plan.bind_host = *s.bind_addr;
}

// The log folder, restarts and the SIGTERM-to-SIGKILL grace.
void set_restarts(LaunchPlan& plan, const config::Settings& s) {
  if (s.log_dir && !s.log_dir->empty()) plan.log_dir = *s.log_dir;
  plan.max_restarts = s.max_restarts.value_or(0);
  if (plan.max_restarts < 0) {
    throw UsageError(fmt::format("--max_restarts must be 0 or more (got {})", plan.max_restarts));
  }
  double term = s.term_timeout.value_or(10.0);
  // Bounded so that now + term_timeout cannot overflow the clock (9223372037 s wrapped to 0).
  if (!(term >= 0) || !(term <= config::kMaxSeconds)) {
    throw UsageError(fmt::format("--term_timeout must be 0 to {:.0f} seconds (got {})",
                                 config::kMaxSeconds, term));
  }
  plan.term_timeout = std::chrono::milliseconds(static_cast<long long>(term * 1000));
}

// Stall detection and Python stacks (docs/diagnose.md).
void set_diagnosis(LaunchPlan& plan, const config::Settings& s) {
  const double stall = s.stall_timeout.value_or(300.0);
  if (!(stall >= 0) || !(stall <= config::kMaxSeconds)) {
    throw UsageError(fmt::format("--stall_timeout must be 0 (off) to {:.0f} seconds (got {})",
                                 config::kMaxSeconds, stall));
  }
  // Measured in whole milliseconds: a smaller positive value would become 0, which is "off".
  if (stall > 0 && stall < 0.001) {
    throw UsageError(
        fmt::format("--stall_timeout {:g} is below 0.001 seconds, the shortest "
                    "stall xlaunch measures; use 0 to turn stall detection off, or "
                    "a timeout of at least 0.001",
                    stall));
  }
  plan.stall_timeout = std::chrono::milliseconds(static_cast<long long>(stall * 1000));
  plan.stop_on_stall = s.on_stall.value_or("continue") == "stop";
  plan.python_stacks = s.python_stacks.value_or(true);
  plan.preload = config::module_names(s.preload.value_or(""));
}

void set_forwarded_signals(LaunchPlan& plan, const config::Settings& s) {
  if (!s.signals_to_handle) return;
  for (const std::string& name : config::unhandled_signals(*s.signals_to_handle)) {
    if (auto number = config::signal_number(name)) plan.forwarded_signals.push_back(*number);
  }
}

}  // namespace

bool output_off_console(const LaunchPlan& plan) {
  return std::any_of(
      plan.console_streams.begin(), plan.console_streams.end(),
      [](const config::ConsoleStreams& s) { return !s.stdout_shown || !s.stderr_shown; });
}

std::string make_run_id(std::chrono::system_clock::time_point now, std::uint32_t random) {
  auto seconds = std::chrono::floor<std::chrono::seconds>(now);
  return fmt::format("{:%Y%m%d-%H%M%S}-{:06x}", seconds, random & 0xffffffu);
}

LaunchPlan make_plan(const config::Settings& s, std::vector<std::string> argv,
                     const std::vector<std::string>& visible_gpus, std::string run_id,
                     const Sources& sources) {
  LaunchPlan plan;
  plan.argv = std::move(argv);
  set_run_id(plan, s, run_id);
  set_machines(plan, s, sources);
  set_workers(plan, s, visible_gpus, sources);
  set_distributed(plan, s);
  set_store_address(plan, s);
  set_restarts(plan, s);
  config::ConsoleSelection console = config::console_selection(s, plan.local_world_size);
  plan.console_ranks = std::move(console.ranks);
  plan.console_streams = std::move(console.streams);
  if (s.role) plan.role = *s.role;
  plan.virtual_local_rank = s.virtual_local_rank.value_or(false);
  set_diagnosis(plan, s);
  set_forwarded_signals(plan, s);
  return plan;
}

std::optional<std::string> shared_gpus_warning(const LaunchPlan& plan) {
  const int gpus = static_cast<int>(plan.gpus.size());
  if (gpus == 0 || plan.local_world_size <= gpus) return std::nullopt;
  const int last = plan.local_world_size - 1;
  const std::string without =
      last > gpus ? fmt::format("local ranks {} to {} have no GPU of their own", gpus, last)
                  : fmt::format("local rank {} has no GPU of its own", gpus);
  return fmt::format(
      "{} GPU workers share {} GPU(s) on this machine ({}): {}, so "
      "torch.cuda.set_device(LOCAL_RANK) fails there and NCCL refuses two ranks on one GPU; "
      "use --num_processes {} for one worker per GPU, or --use_cpu for CPU workers",
      plan.local_world_size, gpus, fmt::join(plan.gpus, ","), without, gpus * plan.num_machines);
}

}  // namespace xlaunch::launcher
