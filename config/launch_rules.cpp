#include "config/launch_rules.hpp"

#include <fmt/core.h>

#include "config/torchrun_values.hpp"
#include "config/usage_error.hpp"

namespace xlaunch::config {
namespace {

Origin origin_of(const Resolved& r, const char* key) {
  const auto it = r.origins.find(key);
  return it == r.origins.end() ? Origin::Default : it->second;
}

std::string from(const Resolved& r, const char* key) {
  switch (origin_of(r, key)) {
    case Origin::Flag:
      return "the command line";
    case Origin::Environment:
    case Origin::TorchrunEnvironment:
      return "the environment";
    case Origin::File:
      return r.config_file ? "config file " + *r.config_file : "the config file";
    case Origin::Default:
      break;
  }
  return "the defaults";
}

// "--rdzv_endpoint", or the variable that set it ("PET_RDZV_ENDPOINT").
std::string setting_name(const Resolved& r, const char* key) {
  if (const auto it = r.variables.find(key); it != r.variables.end()) return it->second;
  if (origin_of(r, key) == Origin::File) return std::string("config key ") + key;
  return std::string("--") + key;
}

void apply_endpoint(Resolved& r, const IsLocalHost& is_local) {
  Settings& s = r.settings;
  if (!s.rdzv_endpoint) {
    check_endpoint_port(s, s.num_machines.value_or(1), {});  // --master_port 0
    return;
  }
  const auto endpoint = parse_endpoint(*s.rdzv_endpoint);
  if (!endpoint) return;  // the schema checked it; settings built in code may not be
  s.main_process_ip = endpoint->host;
  s.main_process_port = endpoint->port;
  r.origins["main_process_ip"] = r.origins["main_process_port"] = origin_of(r, "rdzv_endpoint");
  check_endpoint_port(s, s.num_machines.value_or(1), setting_name(r, "rdzv_endpoint"));
  // etcd's endpoint (port 2379 by default): no launcher hosts it, ranks come from the join.
  if (s.rdzv_backend && s.rdzv_backend->starts_with("etcd")) {
    if (!endpoint->port_given) s.main_process_port = 2379;
    return;
  }
  const bool hosts = s.rdzv_is_host.value_or(is_local(endpoint->host));
  const int machines = s.num_machines.value_or(s.min_machines.value_or(1));
  if (s.machine_rank) {
    if (s.rdzv_is_host == true && *s.machine_rank != 0) {
      throw UsageError(
          fmt::format("--rdzv_conf is_host=true, but --node_rank is {}: machine 0 hosts the store",
                      *s.machine_rank),
          "drop --node_rank on the launcher that hosts the store, or is_host on the others");
    }
    return;
  }
  if (hosts) {
    s.machine_rank = 0;
    const bool elastic = s.min_machines && s.max_machines && *s.min_machines < *s.max_machines;
    if (!s.rdzv_is_host && (machines > 1 || elastic)) s.rdzv_host_guessed = true;
    // One machine binds loopback by default, but its workers dial the endpoint's host.
    if (machines == 1 && !s.bind_addr) s.bind_addr = endpoint->host;
  } else if (s.min_machines && s.max_machines && *s.min_machines < *s.max_machines) {
    return;  // elastic: a joining launcher takes its machine rank by join order
  } else if (machines == 1) {
    throw UsageError(
        fmt::format("--rdzv_endpoint {}: that is not this machine, but a one-machine job hosts "
                    "its own store",
                    *s.rdzv_endpoint),
        "drop --rdzv_endpoint, give --nnodes with the job's machine count, or --rdzv_conf "
        "is_host=true");
  } else {
    throw UsageError(
        fmt::format("--rdzv_endpoint {}: this launcher does not host the store (the endpoint is "
                    "not one of this machine's addresses), and which machine rank it has is "
                    "not decided automatically yet",
                    *s.rdzv_endpoint),
        "give --node_rank 1, 2, ... on each launcher that joins (the endpoint's host is 0), or "
        "--rdzv_conf is_host=true on the one that hosts");
  }
}

}  // namespace

void check_endpoint_port(const Settings& s, int machines, const std::string& name) {
  if (machines <= 1) return;
  const bool etcd = s.rdzv_backend && s.rdzv_backend->starts_with("etcd");
  if (!s.rdzv_endpoint && !etcd && s.main_process_port == 0) {
    // Asked for explicitly, it was quietly replaced by 29500 (torchrun's own 0 fails later).
    throw UsageError(
        fmt::format("--main_process_port (--master_port) 0 is a free port chosen by machine 0, "
                    "which the other machines of a {}-machine job cannot know",
                    machines),
        "give the same fixed port to every machine, e.g. --master_port 29500, or none for "
        "29500");
  }
  if (!s.rdzv_endpoint) return;
  const auto endpoint = parse_endpoint(*s.rdzv_endpoint);
  if (!endpoint || !endpoint->port_given || endpoint->port != 0) return;
  throw UsageError(
      fmt::format("{} {}: port 0 is a free port chosen by the machine that hosts the store, "
                  "which the other machines of a {}-machine job cannot know",
                  name, *s.rdzv_endpoint, machines),
      fmt::format("give the same fixed port to every machine, e.g. {} {}:29400 (or no port for "
                  "torchrun's 29400); port 0 suits one machine (--nnodes 1, or --standalone)",
                  name,
                  endpoint->host.find(':') == std::string::npos ? endpoint->host
                                                                : "[" + endpoint->host + "]"));
}

UsageError count_contradiction(int total, std::string_view per_machine, int machines, int counted,
                               std::string_view where) {
  return UsageError(
      fmt::format("num_processes {} and nproc_per_node {} contradict each other{}: {} "
                  "machine(s) of {} processes is {}",
                  total, per_machine, where, machines, counted, counted * machines),
      "give one of them: --num_processes counts the whole job, --nproc_per_node one machine");
}

void apply_launch_rules(Resolved& r, const IsLocalHost& is_local) {
  Settings& s = r.settings;
  std::vector<std::string> problems;

  if (s.num_processes && (s.nproc_per_node || s.nproc_per_node_device)) {
    const Origin total = origin_of(r, "num_processes");
    const Origin per = origin_of(r, "nproc_per_node");
    const int machines = s.num_machines.value_or(1);
    if (total == per && s.nproc_per_node && *s.nproc_per_node * machines != *s.num_processes) {
      throw count_contradiction(*s.num_processes, std::to_string(*s.nproc_per_node), machines,
                                *s.nproc_per_node, fmt::format(" ({})", from(r, "num_processes")));
    } else if (total > per) {
      s.nproc_per_node = std::nullopt;
      s.nproc_per_node_device = std::nullopt;
    } else if (per > total) {
      s.num_processes = std::nullopt;
    }
  }

  if (s.use_cpu == true && s.distributed_type == DistributedType::MultiGpu) {
    const Origin cpu = origin_of(r, "use_cpu");
    const Origin type = origin_of(r, "distributed_type");
    if (cpu == type) {
      throw UsageError(
          fmt::format("distributed_type MULTI_GPU and use_cpu true contradict each other ({})",
                      from(r, "use_cpu")),
          "use distributed_type MULTI_CPU for CPU workers, or use_cpu false for GPU workers");
    }
    if (cpu > type) {
      s.distributed_type = DistributedType::MultiCpu;
    } else {
      s.use_cpu = false;
    }
  }

  if (s.distributed_type == DistributedType::No) {
    const bool total = s.num_processes.value_or(1) > 1;
    const int processes = total ? *s.num_processes : s.nproc_per_node.value_or(1);
    if (processes > 1) {
      throw UsageError(
          fmt::format("distributed_type NO (from {}) runs one process, but {} processes were "
                      "asked for (from {})",
                      from(r, "distributed_type"), processes,
                      from(r, total ? "num_processes" : "nproc_per_node")),
          "for several processes use --multi_gpu (distributed_type MULTI_GPU) or "
          "distributed_type MULTI_CPU; or ask for 1 process");
    }
  }

  apply_endpoint(r, is_local);
}

}  // namespace xlaunch::config
