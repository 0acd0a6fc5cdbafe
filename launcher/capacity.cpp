#include "launcher/capacity.hpp"

#include <fmt/format.h>

#include <string>

#include "config/usage_error.hpp"

namespace xlaunch::launcher {
namespace {

/// "--nproc_per_node 8", "--num_processes 100000", or the default's description.
std::string count_source(const config::Settings& s, const LaunchPlan& plan) {
  if (s.nproc_per_node) return fmt::format("--nproc_per_node {}", *s.nproc_per_node);
  if (s.num_processes) {
    if (plan.num_machines == 1) return fmt::format("--num_processes {}", *s.num_processes);
    return fmt::format("--num_processes {} over {} machines", *s.num_processes, plan.num_machines);
  }
  return "the default (one worker per GPU)";
}

/// The flag to change in a hint.
const char* count_flag(const config::Settings& s) {
  return s.nproc_per_node ? "--nproc_per_node" : "--num_processes";
}

}  // namespace

std::uint64_t descriptors_per_worker(const LaunchPlan& plan) {
  std::uint64_t n = plan.log_dir ? 4 : 2;  // stdout and stderr pipes, and their log files
  // Machine 0 hosts the store, which every worker of the job (this machine's share of them
  // times the machine count) connects to.
  if (plan.machine_rank == 0) {
    n += kStoreConnectionsPerWorker * static_cast<std::uint64_t>(plan.num_machines);
  }
  return n;
}

std::uint64_t descriptors_needed(const LaunchPlan& plan) {
  // Plus one store connection per other machine's agent.
  const std::uint64_t agents =
      plan.machine_rank == 0 ? static_cast<std::uint64_t>(plan.num_machines) : 0;
  return kReservedDescriptors + agents +
         static_cast<std::uint64_t>(plan.local_world_size) * descriptors_per_worker(plan);
}

std::uint64_t store_connection_budget(const LaunchPlan& plan, std::uint64_t max_open_files) {
  const std::uint64_t per_worker_own = plan.log_dir ? 4 : 2;
  // Twice the workers' own: a restart opens new pipes before the old ones are all closed.
  const std::uint64_t own =
      kReservedDescriptors + 2 * per_worker_own * static_cast<std::uint64_t>(plan.local_world_size);
  return max_open_files > own + 1 ? max_open_files - own : 1;
}

void check_capacity(const LaunchPlan& plan, const config::Settings& settings,
                    const CapacityLimits& limits) {
  const auto workers = static_cast<std::uint64_t>(plan.local_world_size);
  const std::string source = count_source(settings, plan);
  if (plan.local_world_size > kMaxLocalWorkers) {
    throw UsageError(
        fmt::format("{} asks for {} workers on this machine; xlaunch runs at most {} per machine",
                    source, workers, kMaxLocalWorkers),
        fmt::format("use a smaller {}, or spread the job over more machines (--num_machines)",
                    count_flag(settings)));
  }

  if (limits.max_user_processes) {
    // The workers, and the guardian process that outlives the launcher to clean up.
    const std::uint64_t max = *limits.max_user_processes;
    const std::uint64_t free = max > limits.user_processes ? max - limits.user_processes : 0;
    if (workers + 1 > free) {
      throw UsageError(
          fmt::format("{} asks for {} workers on this machine, but your process limit "
                      "(ulimit -u) is {} and you already run {} processes and threads",
                      source, workers, max, limits.user_processes),
          fmt::format("use {} {} or fewer, or raise the limit with 'ulimit -u N' (up to "
                      "'ulimit -Hu'); each worker's own threads count against it too",
                      count_flag(settings), free > 1 ? free - 1 : 0));
    }
  }

  if (limits.max_open_files) {
    const std::uint64_t max = *limits.max_open_files;
    const std::uint64_t needed = descriptors_needed(plan);
    if (limits.open_files + needed > max) {
      const std::uint64_t per_worker = descriptors_per_worker(plan);
      const std::uint64_t fixed = limits.open_files + needed - workers * per_worker;
      const std::uint64_t fit = max > fixed ? (max - fixed) / per_worker : 0;
      throw UsageError(
          fmt::format("{} asks for {} workers on this machine, which need about {} open files, "
                      "but the open-file limit (ulimit -n, already raised to its hard limit) "
                      "is {} with {} in use",
                      source, workers, needed, max, limits.open_files),
          fmt::format("raise the hard limit ('ulimit -Hn N' as root, or nofile in "
                      "/etc/security/limits.conf), or use {} {} or fewer",
                      count_flag(settings), fit));
    }
  }
}

}  // namespace xlaunch::launcher
