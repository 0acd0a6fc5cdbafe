// The guardian: a tiny process forked at start that kills what is left in the run's
// containment whenever the launcher goes (SIGKILL included), and GroupGuardian's side of it.
#include <fcntl.h>
#include <fmt/core.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

#include "launcher/containment_posix.hpp"
#include "launcher/guardian_groups.hpp"
#include "launcher/preload_template.hpp"
#include "launcher/proc_start_ticks.hpp"
#include "launcher/process.hpp"
#include "launcher/spawner.hpp"

namespace xlaunch::launcher {
namespace {

constexpr long kReadyWaitMs = 10'000;

// A kill request on the socket; a positive value registers a process group, a negative one
// unregisters it.
constexpr std::int32_t kKillRequest = 0;

void reap_orphans() {
  while (::waitpid(-1, nullptr, WNOHANG) > 0) {
  }
}

void on_sigchld(int) {}  // only interrupts ppoll

struct GuardianState {
  Containment mechanism;
  const CgroupPaths* cgroup;
  GuardedGroups groups;
};

// When process `pid` started (see proc_start_ticks.hpp); 0 when it is gone.
unsigned long long start_ticks(std::int32_t pid) {
  char path[32] = "/proc/";
  char digits[12];
  int n = 0;
  for (std::uint32_t rest = static_cast<std::uint32_t>(pid); n == 0 || rest > 0; rest /= 10)
    digits[n++] = static_cast<char>('0' + rest % 10);
  std::size_t at = std::strlen(path);
  while (n > 0) path[at++] = digits[--n];
  std::memcpy(path + at, "/stat", 6);
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  static char text[1024];
  const ssize_t got = ::read(fd, text, sizeof(text));
  ::close(fd);
  if (got <= 0) return 0;
  return parse_start_ticks(std::string_view(text, static_cast<std::size_t>(got))).value_or(0);
}

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
      for (std::size_t i = 0; i < state.groups.count; ++i) {
        const std::int32_t pgid = state.groups.groups[i];
        if (!state.groups.reused(i, start_ticks(pgid))) ::kill(-pgid, SIGKILL);
      }
      state.groups.count = 0;  // gone; their ids may be reused
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
  close_from(3, fd);  // forked before any thread exists
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
  static unsigned long long leader_starts[1 << 16];
  GuardianState state{mechanism, &cgroup,
                      GuardedGroups{groups, leader_starts, sizeof(groups) / sizeof(groups[0])}};
  // Ready; 'b': and workers can be born in the cgroup. Probed here, beside the launcher's own
  // start-up rather than in it.
  const char ready = mechanism == Containment::Cgroup && can_be_born_in(cgroup.dir) ? 'b' : 'r';
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
    static char packet[sizeof(LeftoverMessage)];
    std::int32_t message = 0;
    ssize_t n = ::recv(fd, packet, sizeof(packet), 0);
    if (n > static_cast<ssize_t>(sizeof(message))) {
      note_leftover(packet, static_cast<std::size_t>(n));  // guardian_leftovers_posix.cpp
      continue;
    }
    if (n == sizeof(message)) {
      std::memcpy(&message, packet, sizeof(message));
      if (message == kKillRequest) {
        guardian_kill(state);
        const char done = 'k';
        ::send(fd, &done, 1, MSG_NOSIGNAL);
      } else if (message < 0) {
        // Only the launcher and its new workers (before exec) hold this socket; still, the
        // one value with no positive twin is ignored.
        if (message != INT32_MIN) state.groups.forget(-message);
      } else {
        // Read as the registration is read: a short worker may have ended already.
        state.groups.remember(message, start_ticks(message));
      }
      continue;
    }
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    break;  // EOF: the launcher is gone, or done
  }
  guardian_kill(state);
  if (mechanism == Containment::Cgroup) remove_cgroup(cgroup);
  remove_leftovers();  // a killed launcher's files (guardian_leftovers_posix.cpp)
  ::_exit(0);          // as a namespace's init, this makes the kernel kill any member left
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

}  // namespace

int wait_for(long pid) {
  int status = 0;
  while (::waitpid(static_cast<pid_t>(pid), &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

ForkedGuardian launch_guardian(Containment mechanism, const CgroupPaths& cgroup) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) {
    return {-1, -1, "cannot start its guardian: socketpair: " + errno_text(errno)};
  }
  // Its parent may have threads (a real NVML starts some): no atfork handler in the child.
  const auto pid = static_cast<pid_t>(fork_bare());
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
  return {pid, fds[1], {}};
}

StartedGuardian await_guardian(ForkedGuardian forked, Containment mechanism,
                               const CgroupPaths& cgroup) {
  if (forked.pid < 0) return {-1, -1, forked.failure};
  char ready = 0;
  if (receive_byte(forked.fd, ready, kReadyWaitMs) && (ready == 'r' || ready == 'b')) {
    return {forked.pid, forked.fd, {}, ready == 'b'};
  }
  ::close(forked.fd);
  if (ready != 'c') ::kill(static_cast<pid_t>(forked.pid), SIGKILL);
  const int status = wait_for(forked.pid);
  if (ready == 'c' && WIFEXITED(status)) {
    return {-1, -1,
            fmt::format("cannot create {}: {}", cgroup.dir, errno_text(WEXITSTATUS(status)))};
  }
  if (mechanism == Containment::Cgroup) ::rmdir(cgroup.dir);  // it may have made it
  return {-1, -1, "cannot start its guardian: it did not answer"};
}

StartedGuardian fork_guardian(Containment mechanism, const CgroupPaths& cgroup) {
  return await_guardian(launch_guardian(mechanism, cgroup), mechanism, cgroup);
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
  forget_leftovers();  // a launcher that gets here removed its files itself
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

void GroupGuardian::forget(long pgid) {
  if (mechanism_ != Containment::ProcessGroup || pgid <= 0) return;
  if (fd_ < 0) {
    std::erase(groups_, pgid);
    return;
  }
  const std::int32_t value = -static_cast<std::int32_t>(pgid);
  ::send(fd_, &value, sizeof(value), MSG_NOSIGNAL);
}

void GroupGuardian::kill_descendants() {
  if (mechanism_ == Containment::Cgroup && !cgroup_dir_.empty() && cgroup_is_empty(cgroup_dir_)) {
    // Nothing to kill (new members come only from the spawner, which makes none meanwhile),
    // and never killed, workers can still be born there (process.hpp). Most attempts end so:
    // no round trip to the guardian.
  } else if (fd_ >= 0) {
    worker_placement().born_in_cgroup = false;  // from now on workers move in (process.hpp)
    char stale = 0;
    while (::recv(fd_, &stale, 1, MSG_DONTWAIT) == 1) {
    }  // an answer to an earlier request that timed out
    const std::int32_t request = kKillRequest;
    if (::send(fd_, &request, sizeof(request), MSG_NOSIGNAL) == sizeof(request)) {
      char done = 0;
      receive_byte(fd_, done, kAckWaitMs);
    }
  } else if (mechanism_ == Containment::Cgroup && !cgroup_dir_.empty()) {
    worker_placement().born_in_cgroup = false;
    kill_cgroup(cgroup_paths(cgroup_dir_));
  } else if (mechanism_ == Containment::ProcessGroup) {
    for (long pgid : groups_) signal_group(pgid, SIGKILL);
    groups_.clear();
  }
  // Orphans adopted by this subreaper (process groups: escaped descendants of a worker
  // that ended; cgroup: already killed).
  kill_unknown_children([](long) { return false; });
}

void GroupGuardian::kill_unknown_children(const std::function<bool(long)>& known) const {
  std::vector<long> doomed;
  for (long child : list_children()) {
    const bool helper = child == pid_ || child == spawner_pid() || child == preload_template_pid();
    if (!helper && !known(child)) doomed.push_back(child);
  }
  // Their own descendants too: killed first, a daemon would hand its children to this
  // subreaper after the list was read.
  kill_process_trees(doomed);
}

}  // namespace xlaunch::launcher
