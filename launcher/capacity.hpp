// Whether this machine can run the planned workers at all. Checked before anything starts,
// so that a typo such as --num_processes 100000 is one usage error, not thousands of
// half-started workers and zombies.
#pragma once

#include <cstdint>
#include <optional>

#include "config/settings.hpp"
#include "launcher/launch_plan.hpp"

namespace xlaunch::launcher {

/// Local workers one xlaunch runs at most (the wizard asks within it too).
inline constexpr int kMaxLocalWorkers = config::kMaxLocalWorkers;

/// Descriptors the launcher keeps whatever the worker count (stdio, xlaunch.log, the store's
/// listening socket, the event loop's own, the guardian's pipe, the pipes of a spawn in
/// progress, NVML), with room to spare.
inline constexpr std::uint64_t kReservedDescriptors = 32;

/// Store connections counted per worker of the job on machine 0, which hosts the store: a
/// PyTorch rank (or a libxlaunch worker) keeps one.
inline constexpr std::uint64_t kStoreConnectionsPerWorker = 1;

/// What the OS allows; read by read_capacity_limits().
struct CapacityLimits {
  /// RLIMIT_NPROC (soft); nullopt when unlimited or not enforced (root).
  std::optional<std::uint64_t> max_user_processes;
  /// Processes and threads this user runs now (they count against RLIMIT_NPROC).
  std::uint64_t user_processes = 0;
  /// RLIMIT_NOFILE (soft) once raised to the hard limit; nullopt when unlimited.
  std::optional<std::uint64_t> max_open_files;
  /// Descriptors this process holds now.
  std::uint64_t open_files = 0;
};

/// Descriptors the launcher holds per local worker: two pipe read ends (stdout, stderr), two
/// log files with --log_dir, and on machine 0 the store connections of its share of the job.
std::uint64_t descriptors_per_worker(const LaunchPlan& plan);

/// Descriptors the plan needs in all, besides those already open.
std::uint64_t descriptors_needed(const LaunchPlan& plan);

/// Connections the hosted store may hold at `max_open_files` descriptors: it shares them with
/// the launcher, whose own (pipes, logs, a restart's new ones) must never run out because
/// idle clients took them.
std::uint64_t store_connection_budget(const LaunchPlan& plan, std::uint64_t max_open_files);

/// Throws UsageError (exit 2) naming the flag that set the count, the limit it passes and what
/// to do, when the plan's local workers exceed kMaxLocalWorkers, the user's process limit or
/// the open-file limit. `settings` only tells which flag set the count.
void check_capacity(const LaunchPlan& plan, const config::Settings& settings,
                    const CapacityLimits& limits);

/// Reads the limits from the OS (getrlimit, /proc), after raising the open-file soft limit to
/// the hard one as the launcher does. Never fails: what cannot be read is left unlimited.
CapacityLimits read_capacity_limits();

}  // namespace xlaunch::launcher
