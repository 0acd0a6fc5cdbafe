#include "config/settings.hpp"

#include <algorithm>
#include <cctype>
#include <string>

#include "config/text.hpp"

namespace xlaunch::config {
namespace {

template <typename T>
void take(std::optional<T>& into, const std::optional<T>& from) {
  if (from) into = from;
}

}  // namespace

Settings merge(const Settings& low, const Settings& high) {
  Settings out = low;
  take(out.compute_environment, high.compute_environment);
  take(out.distributed_type, high.distributed_type);
  take(out.mixed_precision, high.mixed_precision);
  take(out.num_processes, high.num_processes);
  take(out.nproc_per_node, high.nproc_per_node);
  take(out.num_machines, high.num_machines);
  take(out.machine_rank, high.machine_rank);
  take(out.main_process_ip, high.main_process_ip);
  take(out.main_process_port, high.main_process_port);
  take(out.gpu_ids, high.gpu_ids);
  take(out.rdzv_backend, high.rdzv_backend);
  take(out.rdzv_id, high.rdzv_id);
  take(out.same_network, high.same_network);
  take(out.use_cpu, high.use_cpu);
  take(out.debug, high.debug);
  take(out.log_dir, high.log_dir);
  take(out.max_restarts, high.max_restarts);
  take(out.term_timeout, high.term_timeout);
  take(out.rdzv_timeout, high.rdzv_timeout);
  take(out.heartbeat_timeout, high.heartbeat_timeout);
  take(out.tee, high.tee);
  take(out.redirects, high.redirects);
  take(out.local_ranks_filter, high.local_ranks_filter);
  take(out.python, high.python);
  take(out.bind_addr, high.bind_addr);
  for (const auto& [name, value] : high.accelerate) out.accelerate[name] = value;
  // Each pair below is one setting written two ways: a source that says either says both.
  if (high.min_machines || high.max_machines) {
    out.num_machines = high.num_machines;
    out.min_machines = high.min_machines;
    out.max_machines = high.max_machines;
  } else if (high.num_machines) {
    out.min_machines = out.max_machines = std::nullopt;
  }
  if (high.nproc_per_node_device) {
    out.nproc_per_node = std::nullopt;
    out.nproc_per_node_device = high.nproc_per_node_device;
  } else if (high.nproc_per_node) {
    out.nproc_per_node_device = std::nullopt;
  }
  take(out.rdzv_endpoint, high.rdzv_endpoint);
  take(out.rdzv_last_call_timeout, high.rdzv_last_call_timeout);
  take(out.rdzv_close_timeout, high.rdzv_close_timeout);
  take(out.rdzv_read_timeout, high.rdzv_read_timeout);
  take(out.rdzv_is_host, high.rdzv_is_host);
  take(out.rdzv_host_guessed, high.rdzv_host_guessed);
  take(out.role, high.role);
  take(out.local_addr, high.local_addr);
  take(out.signals_to_handle, high.signals_to_handle);
  take(out.virtual_local_rank, high.virtual_local_rank);
  take(out.numa_binding, high.numa_binding);
  take(out.stall_timeout, high.stall_timeout);
  take(out.on_stall, high.on_stall);
  take(out.python_stacks, high.python_stacks);
  take(out.preload, high.preload);
  return out;
}

std::string_view to_string(DistributedType type) {
  switch (type) {
    case DistributedType::No:
      return "NO";
    case DistributedType::MultiGpu:
      return "MULTI_GPU";
    case DistributedType::DataParallel:
      return "DP";
    case DistributedType::MultiCpu:
      return "MULTI_CPU";
  }
  return "NO";
}

std::string_view to_string(MixedPrecision precision) {
  switch (precision) {
    case MixedPrecision::No:
      return "no";
    case MixedPrecision::Fp16:
      return "fp16";
    case MixedPrecision::Bf16:
      return "bf16";
    case MixedPrecision::Fp8:
      return "fp8";
  }
  return "no";
}

std::optional<DistributedType> parse_distributed_type(std::string_view text) {
  const std::string t = lower(text);
  if (t == "no") return DistributedType::No;
  if (t == "multi_gpu" || t == "ddp") return DistributedType::MultiGpu;
  if (t == "dp") return DistributedType::DataParallel;
  if (t == "multi_cpu") return DistributedType::MultiCpu;
  return std::nullopt;
}

std::optional<MixedPrecision> parse_mixed_precision(std::string_view text) {
  const std::string t = lower(text);
  if (t == "no") return MixedPrecision::No;
  if (t == "fp16") return MixedPrecision::Fp16;
  if (t == "bf16") return MixedPrecision::Bf16;
  if (t == "fp8") return MixedPrecision::Fp8;
  return std::nullopt;
}

}  // namespace xlaunch::config
