// Orphan containment on Linux: probing cgroup v2 and PID namespaces, and the guardian.
#include <fcntl.h>
#include <fmt/core.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <random>
#include <system_error>

#include "config/usage_error.hpp"
#include "launcher/containment.hpp"
#include "launcher/exit_status.hpp"
#include "launcher/launch_error.hpp"
#include "launcher/process.hpp"
#include "launcher/run_files.hpp"

namespace xlaunch::launcher {
namespace {

// How long a kill waits for the cgroup to empty (a process tearing down GPU contexts may
// take seconds to die), and how long the launcher waits for the guardian to confirm.
constexpr long kKillWaitMs = 10'000;
constexpr long kAckWaitMs = kKillWaitMs + 5'000;
constexpr long kReadyWaitMs = 10'000;

// A kill request on the socket; any other value registers a process group.
constexpr std::int32_t kKillRequest = 0;

std::string errno_text(int error) { return std::generic_category().message(error); }

// Everything the guardian needs, prepared before fork: from then on it may only make
// async-signal-safe calls (its parent may have threads), and allocates nothing.
struct CgroupPaths {
  char dir[PATH_MAX] = {};
  char kill[PATH_MAX] = {};
  char procs[PATH_MAX] = {};
  char events[PATH_MAX] = {};
};

CgroupPaths cgroup_paths(const std::string& dir) {
  CgroupPaths paths;
  auto put = [&](char(&out)[PATH_MAX], const std::string& value) {
    if (value.size() >= PATH_MAX) throw std::runtime_error("cgroup path too long: " + value);
    std::memcpy(out, value.c_str(), value.size() + 1);
  };
  put(paths.dir, dir);
  put(paths.kill, dir + "/cgroup.kill");
  put(paths.procs, dir + "/cgroup.procs");
  put(paths.events, dir + "/cgroup.events");
  return paths;
}

// --- async-signal-safe helpers (the guardian, and children between fork and exec) -------

long monotonic_ms() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec * 1000L + now.tv_nsec / 1'000'000L;
}

bool write_text(const char* path, const char* text) {
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  std::size_t size = std::strlen(text);
  bool ok = ::write(fd, text, size) == static_cast<ssize_t>(size);
  int error = errno;
  ::close(fd);
  errno = error;
  return ok;
}

// "populated 0" in cgroup.events; an unreadable file counts as empty (the cgroup is gone).
bool cgroup_empty(int events_fd) {
  char text[512];
  ssize_t n = ::pread(events_fd, text, sizeof(text) - 1, 0);
  if (n <= 0) return true;
  text[n] = '\0';
  const char* populated = std::strstr(text, "populated ");
  return populated == nullptr || populated[10] == '0';
}

// Kernels before 5.14 have no cgroup.kill: SIGKILL each pid cgroup.procs lists.
void kill_listed(const char* procs_path) {
  int fd = ::open(procs_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char chunk[4096];
  long pid = 0;
  ssize_t n;
  while ((n = ::read(fd, chunk, sizeof(chunk))) > 0) {
    for (ssize_t i = 0; i < n; ++i) {
      if (chunk[i] >= '0' && chunk[i] <= '9') {
        pid = pid * 10 + (chunk[i] - '0');
      } else {
        if (pid > 0) ::kill(static_cast<pid_t>(pid), SIGKILL);
        pid = 0;
      }
    }
  }
  if (pid > 0) ::kill(static_cast<pid_t>(pid), SIGKILL);
  ::close(fd);
}

// SIGKILLs every process in the cgroup and waits (bounded) until it is empty. cgroup.kill
// also reaches processes forked while it runs; the fallback repeats until none is left.
void kill_cgroup(const CgroupPaths& cgroup) {
  bool have_kill = write_text(cgroup.kill, "1");
  int events = ::open(cgroup.events, O_RDONLY | O_CLOEXEC);
  const long deadline = monotonic_ms() + kKillWaitMs;
  while (events >= 0) {
    if (!have_kill) kill_listed(cgroup.procs);
    if (cgroup_empty(events)) break;
    long left = deadline - monotonic_ms();
    if (left <= 0) break;
    // cgroup.events signals POLLPRI when "populated" changes; re-check at least every 50 ms.
    pollfd change{events, POLLPRI, 0};
    ::poll(&change, 1, static_cast<int>(left < 50 ? left : 50));
  }
  if (events >= 0) ::close(events);
}

// rmdir, retrying while the last processes finish leaving (EBUSY).
bool remove_cgroup(const CgroupPaths& cgroup) {
  const long deadline = monotonic_ms() + kKillWaitMs;
  while (true) {
    if (::rmdir(cgroup.dir) == 0 || errno == ENOENT) return true;
    if (errno != EBUSY || monotonic_ms() > deadline) return false;
    kill_cgroup(cgroup);
    timespec pause{0, 20'000'000};
    ::nanosleep(&pause, nullptr);
  }
}

void reap_orphans() {
  while (::waitpid(-1, nullptr, WNOHANG) > 0) {
  }
}

void on_sigchld(int) {}  // only interrupts ppoll

struct GuardianState {
  Containment mechanism;
  const CgroupPaths* cgroup;
  std::int32_t* groups;
  std::size_t capacity;
  std::size_t count = 0;
};

void guardian_kill(GuardianState& state) {
  switch (state.mechanism) {
    case Containment::Cgroup:
      kill_cgroup(*state.cgroup);
      break;
    case Containment::PidNamespace:
      // We are the namespace's init: -1 means every other member, nothing outside.
      ::kill(-1, SIGKILL);
      reap_orphans();
      break;
    case Containment::ProcessGroup:
      for (std::size_t i = 0; i < state.count; ++i) ::kill(-state.groups[i], SIGKILL);
      state.count = 0;  // gone; their ids may be reused
      break;
  }
}

// The guardian's whole life: async-signal-safe calls only, no allocation.
[[noreturn]] void guardian_main(int fd, Containment mechanism, const CgroupPaths& cgroup) {
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) ::signal(sig, SIG_IGN);
  ::setpgid(0, 0);
  // Hold nothing of the launcher's: a test's or shell's pipe must close when it dies.
  int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null_fd >= 0) {
    for (int target = 0; target <= 2; ++target) ::dup2(null_fd, target);
  }
  for (int other = 3; other < 1024; ++other) {
    if (other != fd) ::close(other);
  }
  // As a namespace's init we inherit its orphans: SIGCHLD stays blocked except inside
  // ppoll, so no exit is missed between reaping and waiting.
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  ::sigprocmask(SIG_BLOCK, &chld, nullptr);
  struct sigaction action {};
  action.sa_handler = on_sigchld;
  ::sigaction(SIGCHLD, &action, nullptr);
  sigset_t while_waiting;
  sigemptyset(&while_waiting);

  // The guardian makes the run's cgroup: from its mkdir on, someone is there to remove it
  // whenever the launcher dies (a SIGKILL between the launcher's mkdir and this fork left
  // it behind). A failed mkdir is reported as 'c' and the errno as the exit status.
  if (mechanism == Containment::Cgroup && ::mkdir(cgroup.dir, 0755) != 0) {
    const int error = errno;
    const char failed = 'c';
    ::send(fd, &failed, 1, MSG_NOSIGNAL);
    ::_exit(error & 0xff);
  }
  static std::int32_t groups[1 << 16];
  GuardianState state{mechanism, &cgroup, groups, sizeof(groups) / sizeof(groups[0])};
  const char ready = 'r';
  if (::send(fd, &ready, 1, MSG_NOSIGNAL) != 1) {
    if (mechanism == Containment::Cgroup) ::rmdir(cgroup.dir);  // the launcher is gone
    ::_exit(1);
  }
  while (true) {
    reap_orphans();
    pollfd readable{fd, POLLIN, 0};
    if (::ppoll(&readable, 1, nullptr, &while_waiting) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    std::int32_t message = 0;
    ssize_t n = ::recv(fd, &message, sizeof(message), 0);
    if (n == sizeof(message)) {
      if (message == kKillRequest) {
        guardian_kill(state);
        const char done = 'k';
        ::send(fd, &done, 1, MSG_NOSIGNAL);
      } else if (state.count < state.capacity) {
        groups[state.count++] = message;
      }
      continue;
    }
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    break;  // EOF: the launcher is gone, or done
  }
  guardian_kill(state);
  if (mechanism == Containment::Cgroup) remove_cgroup(cgroup);
  ::_exit(0);  // as a namespace's init, this makes the kernel kill any member left
}

// Reaps child `pid` (signals do not cut the wait short); its wait status, 0 if already gone.
int wait_for(long pid) {
  int status = 0;
  while (::waitpid(static_cast<pid_t>(pid), &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// Waits up to `timeout_ms` for one byte from the guardian. Signals (the supervisor's
// SIGCHLD) must not cut the wait short: a kill request must be done before we go on.
bool receive_byte(int fd, char& byte, long timeout_ms) {
  const long deadline = monotonic_ms() + timeout_ms;
  while (true) {
    pollfd readable{fd, POLLIN, 0};
    long left = deadline - monotonic_ms();
    if (left < 0) return false;
    int ready = ::poll(&readable, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready != 1) return false;
    ssize_t n = ::recv(fd, &byte, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    return n == 1;
  }
}

struct StartedGuardian {
  long pid = -1;  // -1: not running; `failure` says why
  int fd = -1;
  std::string failure;
};

// Forks the guardian and waits for its "ready" (for the cgroup mechanism: the cgroup made).
StartedGuardian fork_guardian(Containment mechanism, const CgroupPaths& cgroup) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) {
    return {-1, -1, "cannot start its guardian: socketpair: " + errno_text(errno)};
  }
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[1]);
    guardian_main(fds[0], mechanism, cgroup);
  }
  const int fork_error = errno;
  ::close(fds[0]);
  if (pid < 0) {
    ::close(fds[1]);
    return {-1, -1, "cannot start its guardian: fork: " + errno_text(fork_error)};
  }
  char ready = 0;
  if (receive_byte(fds[1], ready, kReadyWaitMs) && ready == 'r') return {pid, fds[1], {}};
  ::close(fds[1]);
  if (ready != 'c') ::kill(pid, SIGKILL);
  const int status = wait_for(pid);
  if (ready == 'c' && WIFEXITED(status)) {
    return {-1, -1,
            fmt::format("cannot create {}: {}", cgroup.dir, errno_text(WEXITSTATUS(status)))};
  }
  if (mechanism == Containment::Cgroup) ::rmdir(cgroup.dir);  // it may have made it
  return {-1, -1, "cannot start its guardian: it did not answer"};
}

// Runs `body` in a forked child and returns its result: 0, or an errno.
template <typename Body>
int in_child(Body body) {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(body() & 0xff);
  if (pid < 0) return errno;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return errno;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return EINTR;
}

// Where the run's cgroup goes: a new one below the launcher's own. On success `dir` is
// its path (not created here) and detail the directory it is in.
ContainmentProbe run_cgroup_location(std::string& dir) {
  ContainmentProbe probe{Containment::Cgroup, false, {}};
  std::optional<std::string> own = read_file("/proc/self/cgroup");
  std::optional<std::string> path = own ? cgroup2_path(*own) : std::nullopt;
  if (!path) {
    probe.detail = "no cgroup v2 entry (0::) in /proc/self/cgroup";
    return probe;
  }
  std::optional<std::string> mounts = read_file("/proc/self/mountinfo");
  std::optional<std::string> parent = mounts ? cgroup_directory(*mounts, *path) : std::nullopt;
  if (!parent) {
    probe.detail =
        fmt::format("cgroup {} is under no cgroup2 mount in /proc/self/mountinfo", *path);
    return probe;
  }
  std::random_device entropy;
  const unsigned long long random = (static_cast<unsigned long long>(entropy()) << 32) | entropy();
  dir = *parent + "/" + run_cgroup_name(::getpid(), random);
  probe.works = true;
  probe.detail = *parent;
  return probe;
}

// Why no process can join the cgroup at `dir` (delegation, the "no internal processes"
// rule, threaded sub-trees all show there); nullopt when one can.
std::optional<std::string> cannot_join(const std::string& dir) {
  const std::string procs = dir + "/cgroup.procs";
  int error = in_child([&procs] { return write_text(procs.c_str(), "0") ? 0 : errno; });
  if (error == 0) return std::nullopt;
  return fmt::format("cannot move a process into {}: {}", dir, errno_text(error));
}

// For `xlaunch env`: makes a run cgroup and checks that a process can join it. On
// success `dir` is the new cgroup, which the caller removes.
ContainmentProbe make_run_cgroup(std::string& dir) {
  ContainmentProbe probe = run_cgroup_location(dir);
  if (!probe.works) return probe;
  std::optional<std::string> why;
  if (::mkdir(dir.c_str(), 0755) != 0) {
    why = fmt::format("cannot create {}: {}", dir, errno_text(errno));
  } else if ((why = cannot_join(dir))) {
    ::rmdir(dir.c_str());
  }
  if (why) {
    probe = {Containment::Cgroup, false, *why};
    dir.clear();
  }
  return probe;
}

std::string unshare_failure(int error) {
  return fmt::format("unshare(CLONE_NEWPID): {}{}", errno_text(error),
                     error == EPERM ? " (needs CAP_SYS_ADMIN)" : "");
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
    pid_t init = ::fork();
    if (init < 0) return errno;
    if (init == 0) ::_exit(0);
    ::waitpid(init, nullptr, 0);
    return 0;
  });
  probes.push_back(
      {Containment::PidNamespace, error == 0, error == 0 ? "" : unshare_failure(error)});
  return probes;
}

GroupGuardian GroupGuardian::start(ContainmentRequest request) {
  std::vector<ContainmentProbe> probes;
  for (Containment mechanism : containment_candidates(request)) {
    std::string dir;
    int own_namespace = -1;
    if (mechanism == Containment::Cgroup) {
      probes.push_back(run_cgroup_location(dir));
      if (!probes.back().works) continue;
    } else if (mechanism == Containment::PidNamespace) {
      // Our next child (the guardian) becomes the namespace's init; later ones its members.
      own_namespace = ::open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
      if (own_namespace < 0) {
        probes.push_back({mechanism, false,
                          fmt::format("cannot open /proc/self/ns/pid: {}", errno_text(errno))});
        continue;
      }
      if (::unshare(CLONE_NEWPID) != 0) {
        probes.push_back({mechanism, false, unshare_failure(errno)});
        ::close(own_namespace);
        continue;
      }
    }
    const CgroupPaths cgroup = dir.empty() ? CgroupPaths{} : cgroup_paths(dir);
    auto [pid, fd, failure] = fork_guardian(mechanism, cgroup);
    if (mechanism == Containment::Cgroup) {
      // Without a guardian there is no cgroup; with one, it removes the cgroup when told.
      std::optional<std::string> why = pid < 0 ? std::optional(failure) : cannot_join(dir);
      if (why) {
        if (pid > 0) {
          ::close(fd);
          wait_for(pid);
        }
        probes.back() = {mechanism, false, *why};
        continue;
      }
    }
    int run_namespace = -1;
    if (mechanism == Containment::PidNamespace) {
      int error = errno;
      if (pid > 0) {
        run_namespace = ::open(fmt::format("/proc/{}/ns/pid", pid).c_str(), O_RDONLY | O_CLOEXEC);
        error = errno;
      }
      // Our next children go to our own namespace again: while they would not, this
      // process could not create threads (the store's). spawn_worker enters it per fork.
      bool restored = ::setns(own_namespace, CLONE_NEWPID) == 0;
      if (!restored) error = errno;
      if (pid < 0 || run_namespace < 0 || !restored) {
        if (pid > 0) {
          ::close(fd);
          ::kill(static_cast<pid_t>(pid), SIGKILL);
          ::waitpid(static_cast<pid_t>(pid), nullptr, 0);
        }
        if (run_namespace >= 0) ::close(run_namespace);
        ::close(own_namespace);
        probes.push_back({mechanism, false,
                          fmt::format("cannot start the namespace's init: {}", errno_text(error))});
        if (!restored) {
          // Our children would land in a namespace without init: nothing can run.
          throw LaunchError("cannot leave the PID namespace it set up: " + errno_text(error),
                            exit_status::kFailure,
                            fmt::format("set {}=cgroup or group", kContainmentVariable));
        }
        continue;
      }
      probes.push_back({mechanism, true, {}});
    }
    // Without a guardian (fork failed) process groups still work while the launcher
    // lives: it kills by itself.
    WorkerPlacement& placement = worker_placement();
    placement = {};
    if (mechanism == Containment::Cgroup) placement.cgroup_procs = cgroup.procs;
    if (run_namespace >= 0) {
      placement.pid_namespace = run_namespace;
      placement.own_pid_namespace = own_namespace;
    }
    if (request == ContainmentRequest::Auto && mechanism == Containment::ProcessGroup) {
      fmt::print(stderr, "xlaunch: note: {}\n", fallback_note(probes));
    }
    return GroupGuardian(mechanism, pid, fd, dir);
  }
  throw UsageError(unavailable_message(request, probes),
                   fmt::format("unset {} (or set it to auto) to use the best mechanism available",
                               kContainmentVariable));
}

GroupGuardian::GroupGuardian(GroupGuardian&& other) noexcept
    : mechanism_(other.mechanism_),
      pid_(other.pid_),
      fd_(other.fd_),
      cgroup_dir_(std::move(other.cgroup_dir_)),
      groups_(std::move(other.groups_)),
      active_(other.active_) {
  other.pid_ = -1;
  other.fd_ = -1;
  other.cgroup_dir_.clear();
  other.active_ = false;
}

GroupGuardian::~GroupGuardian() {
  if (!active_) return;
  close_fd(fd_);
  if (pid_ > 0 && mechanism_ == Containment::PidNamespace) {
    // The init's exit waits until every member is reaped, workers included, and those are
    // our children: reap whatever ends, or both would wait for ever. (Polls: a blocking
    // waitpid(-1) could wait on a child outside the namespace.)
    const long deadline = monotonic_ms() + kAckWaitMs;
    while (true) {
      pid_t ended = ::waitpid(-1, nullptr, WNOHANG);
      if (ended == pid_ || (ended < 0 && errno != EINTR)) break;
      if (ended == 0) {
        if (monotonic_ms() > deadline) break;  // it was reaped already, or hangs
        timespec pause{0, 5'000'000};
        ::nanosleep(&pause, nullptr);
      }
    }
  } else if (pid_ > 0) {
    wait_for(pid_);  // ECHILD: it died early and the supervisor reaped it
  } else {
    kill_descendants();  // no guardian: what it would have done
  }
  // The guardian removes the cgroup; this covers a guardian that died or never started.
  if (!cgroup_dir_.empty()) remove_cgroup(cgroup_paths(cgroup_dir_));
  WorkerPlacement& placement = worker_placement();
  if (placement.pid_namespace >= 0) ::close(placement.pid_namespace);
  if (placement.own_pid_namespace >= 0) ::close(placement.own_pid_namespace);
  placement = {};
}

std::string GroupGuardian::describe() const {
  std::string text(mechanism());
  if (!cgroup_dir_.empty()) text += " " + cgroup_dir_;
  if (pid_ < 0) text += " (no guardian: a SIGKILLed launcher leaves it to PR_SET_PDEATHSIG)";
  return text;
}

void GroupGuardian::watch(long pgid) {
  if (mechanism_ != Containment::ProcessGroup) return;  // the cgroup or namespace holds them
  if (fd_ < 0) {
    groups_.push_back(pgid);
    return;
  }
  std::int32_t value = static_cast<std::int32_t>(pgid);
  ::send(fd_, &value, sizeof(value), MSG_NOSIGNAL);
}

void GroupGuardian::kill_descendants() {
  if (fd_ >= 0) {
    char stale = 0;
    while (::recv(fd_, &stale, 1, MSG_DONTWAIT) == 1) {
    }  // an answer to an earlier request that timed out
    const std::int32_t request = kKillRequest;
    if (::send(fd_, &request, sizeof(request), MSG_NOSIGNAL) == sizeof(request)) {
      char done = 0;
      receive_byte(fd_, done, kAckWaitMs);
    }
  } else if (mechanism_ == Containment::Cgroup && !cgroup_dir_.empty()) {
    kill_cgroup(cgroup_paths(cgroup_dir_));
  } else if (mechanism_ == Containment::ProcessGroup) {
    for (long pgid : groups_) signal_group(pgid, SIGKILL);
    groups_.clear();
  }
  // Orphans adopted by this subreaper (process groups: escaped descendants of a worker
  // that ended; cgroup: already killed).
  for (long child : list_children()) {
    if (child != pid_) ::kill(static_cast<pid_t>(child), SIGKILL);
  }
}

}  // namespace xlaunch::launcher
