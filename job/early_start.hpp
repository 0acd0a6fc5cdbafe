// The first step of `xlaunch launch`, taken before the command line is even parsed: the
// spawner and the guardian (with the run's cgroup) are forked while the launcher has one
// thread and little memory, so the forks copy little and the guardian makes and probes the
// cgroup while the command line is parsed and the job planned (launch.cpp takes them over).
#pragma once

#include <span>
#include <string_view>

#include "launcher/spawner.hpp"

namespace xlaunch::job {

/// Forks the helpers for `xlaunch launch ARGS` (the words after "launch"), unless the command
/// will start none: help, --dry_run, no words. Any failure is left for the launch itself to
/// meet and report.
void start_helpers_early(std::span<const std::string_view> args);

/// The spawner start_helpers_early forked, else a new one (Spawner::start).
launcher::Spawner take_spawner();

/// Ends the helpers that no launch took over (it ended before: a usage error, say), and
/// waits until the guardian has removed its cgroup.
void end_unused_helpers();

}  // namespace xlaunch::job
