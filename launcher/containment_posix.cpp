// Orphan containment on Linux: probing cgroup v2 and PID namespaces, and setting the chosen
// mechanism up with its guardian (GroupGuardian::start).
#include "launcher/containment_posix.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>

#include <optional>
#include <vector>

#include "config/usage_error.hpp"
#include "launcher/exit_status.hpp"
#include "launcher/launch_error.hpp"
#include "launcher/process.hpp"

namespace xlaunch::launcher {
namespace {

std::string unshare_failure(int error) {
  return fmt::format("unshare(CLONE_NEWPID): {}{}", errno_text(error),
                     error == EPERM ? " (needs CAP_SYS_ADMIN)" : "");
}

// A cgroup guardian forked by GroupGuardian::start_early that start() has not taken over.
struct EarlyGuardian {
  ForkedGuardian forked;
  std::string dir;
  ContainmentProbe location;
};

std::optional<EarlyGuardian>& early_guardian() {
  static std::optional<EarlyGuardian> early;
  return early;
}

// The cgroup mechanism: the run's cgroup below the launcher's, made by the guardian, that a
// process can join (`dir` is its path). nullopt when it does not work here: the last probe
// says why.
std::optional<StartedGuardian> start_in_cgroup(std::vector<ContainmentProbe>& probes,
                                               std::string& dir) {
  StartedGuardian guardian;
  if (std::optional<EarlyGuardian>& early = early_guardian(); early) {
    dir = early->dir;
    probes.push_back(early->location);
    guardian = await_guardian(early->forked, Containment::Cgroup, cgroup_paths(dir));
    early.reset();
  } else {
    probes.push_back(run_cgroup_location(dir));
    if (!probes.back().works) return std::nullopt;
    guardian = fork_guardian(Containment::Cgroup, cgroup_paths(dir));
  }
  // Without a guardian there is no cgroup; with one, it removes the cgroup when told. Born
  // there, the workers skip the move's RCU grace period (process.hpp); else they move in.
  std::optional<std::string> why =
      guardian.pid < 0 ? std::optional(guardian.failure)
                       : (guardian.born_in_cgroup ? std::nullopt : cannot_join(dir));
  if (!why) return guardian;
  if (guardian.pid > 0) {
    ::close(guardian.fd);
    wait_for(guardian.pid);
  }
  probes.back() = {Containment::Cgroup, false, *why};
  return std::nullopt;
}

// The PID-namespace mechanism: the guardian is the init of a new PID namespace, where the
// spawner puts the workers (`run_namespace`); this process stays in its own. nullopt when it does
// not work here: the last probe says why. Throws LaunchError when this process cannot return to its
// own namespace.
std::optional<StartedGuardian> start_in_pid_namespace(std::vector<ContainmentProbe>& probes,
                                                      int& run_namespace) {
  const Containment mechanism = Containment::PidNamespace;
  // Our next child (the guardian) becomes the namespace's init; later ones its members.
  const int own_namespace = ::open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
  if (own_namespace < 0) {
    probes.push_back(
        {mechanism, false, fmt::format("cannot open /proc/self/ns/pid: {}", errno_text(errno))});
    return std::nullopt;
  }
  if (::unshare(CLONE_NEWPID) != 0) {
    probes.push_back({mechanism, false, unshare_failure(errno)});
    ::close(own_namespace);
    return std::nullopt;
  }
  StartedGuardian guardian = fork_guardian(mechanism, CgroupPaths{});
  const long pid = guardian.pid;
  int error = errno;
  if (pid > 0) {
    run_namespace = ::open(fmt::format("/proc/{}/ns/pid", pid).c_str(), O_RDONLY | O_CLOEXEC);
    error = errno;
  }
  // Our next children go to our own namespace again: while they would not, this
  // process could not create threads (the store's). The spawner enters it for the workers.
  bool restored = ::setns(own_namespace, CLONE_NEWPID) == 0;
  if (!restored) error = errno;
  ::close(own_namespace);
  if (pid < 0 || run_namespace < 0 || !restored) {
    if (pid > 0) {
      ::close(guardian.fd);
      ::kill(static_cast<pid_t>(pid), SIGKILL);
      ::waitpid(static_cast<pid_t>(pid), nullptr, 0);
    }
    if (run_namespace >= 0) ::close(run_namespace);
    probes.push_back({mechanism, false,
                      fmt::format("cannot start the namespace's init: {}", errno_text(error))});
    if (!restored) {
      // Our children would land in a namespace without init: nothing can run.
      throw LaunchError("cannot leave the PID namespace it set up: " + errno_text(error),
                        exit_status::kFailure,
                        fmt::format("set {}=cgroup or group", kContainmentVariable));
    }
    return std::nullopt;
  }
  probes.push_back({mechanism, true, {}});
  return guardian;
}

// Where spawn_worker puts the workers of the chosen mechanism.
void place_workers(Containment mechanism, const std::string& cgroup_dir, int run_namespace,
                   bool born_in_cgroup) {
  WorkerPlacement& placement = worker_placement();
  placement = {};
  if (mechanism == Containment::Cgroup) {
    placement.cgroup_procs = cgroup_paths(cgroup_dir).procs;
    placement.born_in_cgroup = born_in_cgroup;
  }
  placement.pid_namespace = run_namespace;
}

}  // namespace

std::vector<ContainmentProbe> probe_containment() {
  std::vector<ContainmentProbe> probes;
  std::string dir;
  probes.push_back(make_run_cgroup(dir));
  if (!dir.empty()) remove_cgroup(cgroup_paths(dir));
  // In a child, so that this process's next children stay where they are.
  int error = in_child([] {
    if (::unshare(CLONE_NEWPID) != 0) return errno;
    const auto init = static_cast<pid_t>(fork_bare());
    if (init < 0) return errno;
    if (init == 0) ::_exit(0);
    ::waitpid(init, nullptr, 0);
    return 0;
  });
  probes.push_back(
      {Containment::PidNamespace, error == 0, error == 0 ? "" : unshare_failure(error)});
  return probes;
}

void GroupGuardian::start_early(ContainmentRequest request) {
  if (early_guardian() || containment_candidates(request).front() != Containment::Cgroup) return;
  std::string dir;
  const ContainmentProbe location = run_cgroup_location(dir);
  if (!location.works) return;  // start() says why
  ForkedGuardian forked = launch_guardian(Containment::Cgroup, cgroup_paths(dir));
  if (forked.pid < 0) return;  // start() tries again, and says why
  early_guardian() = EarlyGuardian{std::move(forked), std::move(dir), location};
}

void GroupGuardian::end_early() {
  std::optional<EarlyGuardian>& early = early_guardian();
  if (!early) return;
  // Told nothing, it ends at the end of its socket: removes its cgroup (if made) and exits.
  ::close(early->forked.fd);
  wait_for(early->forked.pid);
  remove_cgroup(cgroup_paths(early->dir));  // should it have died first
  early.reset();
}

GroupGuardian GroupGuardian::start(ContainmentRequest request) {
  // The early guardian is a cgroup one, forked for the request XLAUNCH_CONTAINMENT made at
  // start-up; a launch that asks for another mechanism first must not inherit it.
  if (containment_candidates(request).front() != Containment::Cgroup) end_early();
  std::vector<ContainmentProbe> probes;
  for (Containment mechanism : containment_candidates(request)) {
    std::string dir;
    int run_namespace = -1;
    std::optional<StartedGuardian> guardian;
    switch (mechanism) {
      case Containment::Cgroup:
        guardian = start_in_cgroup(probes, dir);
        break;
      case Containment::PidNamespace:
        guardian = start_in_pid_namespace(probes, run_namespace);
        break;
      case Containment::ProcessGroup:
        guardian = fork_guardian(mechanism, CgroupPaths{});
        break;
    }
    if (!guardian) continue;
    // Without a guardian (fork failed) process groups still work while the launcher
    // lives: it kills by itself.
    place_workers(mechanism, dir, run_namespace, guardian->born_in_cgroup);
    if (mechanism == Containment::ProcessGroup) worker_placement().group_registry = guardian->fd;
    if (request == ContainmentRequest::Auto && mechanism == Containment::ProcessGroup) {
      fmt::print(stderr, "xlaunch: note: {}\n", fallback_note(probes));
    }
    return GroupGuardian(mechanism, guardian->pid, guardian->fd, dir);
  }
  throw UsageError(unavailable_message(request, probes),
                   fmt::format("unset {} (or set it to auto) to use the best mechanism available",
                               kContainmentVariable));
}

}  // namespace xlaunch::launcher
