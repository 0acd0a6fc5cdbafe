// GCC 12 reports false -Warray-bounds warnings in Boost.Process v2's close_all_fds
// (1.81), which is inlined into spawn_worker below.
#pragma GCC diagnostic ignored "-Warray-bounds"
#pragma GCC diagnostic ignored "-Wstringop-overflow"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

// Boost 1.81's Process v2 uses boost::optional and boost's type traits without including
// them when std::filesystem is selected (BOOST_PROCESS_USE_STD_FS).
#include <dirent.h>

#include <boost/asio/io_context.hpp>
#include <boost/optional.hpp>
#include <boost/process/v2/process.hpp>
#include <boost/process/v2/stdio.hpp>
#include <boost/type_traits.hpp>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <system_error>

#include "launcher/process.hpp"

namespace bp = boost::process::v2;

namespace xlaunch::launcher {
namespace {

/// Runs in the child between fork and exec: async-signal-safe calls only.
struct WorkerSetup {
  pid_t expected_parent;     // the launcher; 0 inside the run's PID namespace
  const char* cgroup_procs;  // the run's cgroup.procs, or null
  const char* const* envp;   // null-terminated "KEY=VALUE" array

  // Our own environment hook: Boost 1.81's process_environment is not header-only.
  bp::error_code on_setup(bp::posix::default_launcher& launcher, const bp::filesystem::path&,
                          const char* const*) const {
    launcher.env = envp;
    return {};
  }

  bp::error_code on_exec_setup(bp::posix::default_launcher&, const bp::filesystem::path&,
                               const char* const*&) const {
    // Before anything can fork: every descendant then inherits the cgroup. Failing here
    // fails the spawn (errno reaches the parent), rather than run a worker uncontained.
    if (cgroup_procs != nullptr) {
      int fd = ::open(cgroup_procs, O_WRONLY | O_CLOEXEC);
      if (fd < 0) return bp::error_code(errno, bp::system_category());
      bool joined = ::write(fd, "0", 1) == 1;
      int error = errno;
      ::close(fd);
      if (!joined) {
        errno = error;
        return bp::error_code(error, bp::system_category());
      }
    }
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    // The launcher may have died before prctl: then nothing would ever kill us.
    if (::getppid() != expected_parent) ::_exit(1);
    // Default dispositions before unblocking: until then a signal meant for the launcher's
    // process group (a terminal's Ctrl-C) would run the launcher's handler here, which
    // tells the launcher's own loop about it a second time.
    for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD}) ::signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    // Only fds 0-2 reach the worker, whatever the launcher or a library left without
    // O_CLOEXEC: an inherited console or pipe end would keep `xlaunch | tee` open after the
    // job. Close-on-exec rather than close: the exec-error pipe must still work.
    if (::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
      for (int fd = 3; fd < 65536; ++fd) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
    return {};
  }

  /// Parent side too, so the group exists before the parent can signal it (EACCES after
  /// the child's exec is harmless).
  void on_success(bp::posix::default_launcher& launcher, const bp::filesystem::path&,
                  const char* const*) const {
    ::setpgid(launcher.pid, launcher.pid);
  }
};

}  // namespace

long spawn_worker(const SpawnSpec& spec) {
  // A private context: Process v2 notifies it around fork, and it has no reactor to rebuild.
  static boost::asio::io_context spawn_context;
  std::vector<std::string> args(spec.argv.begin() + 1, spec.argv.end());
  std::vector<const char*> envp;
  envp.reserve(spec.envp.size() + 1);
  for (const std::string& entry : spec.envp) envp.push_back(entry.c_str());
  envp.push_back(nullptr);
  const WorkerPlacement& place = worker_placement();
  const bool in_namespace = place.pid_namespace >= 0;
  WorkerSetup setup{in_namespace ? 0 : ::getpid(),
                    place.cgroup_procs.empty() ? nullptr : place.cgroup_procs.c_str(), envp.data()};
  if (in_namespace && ::setns(place.pid_namespace, CLONE_NEWPID) != 0) {
    throw std::system_error(errno, std::generic_category(), "setns (the run's PID namespace)");
  }
  // Back to our own namespace whatever happens: threads cannot be created until then.
  struct LeaveNamespace {
    int own;
    ~LeaveNamespace() {
      if (own >= 0) ::setns(own, CLONE_NEWPID);
    }
  } leave{in_namespace ? place.own_pid_namespace : -1};
  // Every signal stays blocked from fork until the child has reset its dispositions.
  sigset_t all;
  sigset_t before;
  sigfillset(&all);
  ::pthread_sigmask(SIG_BLOCK, &all, &before);
  struct RestoreMask {
    sigset_t mask;
    ~RestoreMask() { ::pthread_sigmask(SIG_SETMASK, &mask, nullptr); }
  } restore{before};
  bp::process child(spawn_context, bp::filesystem::path(spec.argv.front()), args,
                    bp::process_stdio{nullptr, spec.stdout_fd, spec.stderr_fd}, setup);
  long pid = child.id();
  child.detach();  // the supervisor reaps it with waitpid
  return pid;
}

WorkerPlacement& worker_placement() {
  static WorkerPlacement placement;
  return placement;
}

void signal_group(long pgid, int signal) {
  if (pgid > 0) ::kill(static_cast<pid_t>(-pgid), signal);  // ESRCH: already gone
}

void reserve_standard_fds() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    // Opened lowest-first, /dev/null lands on this very number.
    int null_fd = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
    if (null_fd >= 0 && null_fd != fd) ::close(null_fd);
  }
}

namespace {

sigset_t stop_signal_set() {
  sigset_t stop;
  sigemptyset(&stop);
  for (int sig : kStopSignals) sigaddset(&stop, sig);
  return stop;
}

}  // namespace

void hold_stop_signals() {
  const sigset_t stop = stop_signal_set();
  ::pthread_sigmask(SIG_BLOCK, &stop, nullptr);
}

void release_stop_signals() {
  const sigset_t stop = stop_signal_set();
  ::pthread_sigmask(SIG_UNBLOCK, &stop, nullptr);
}

void ignore_stop_signals() {
  for (int sig : kStopSignals) ::signal(sig, SIG_IGN);
}

std::vector<int> ignored_stop_signals() {
  std::vector<int> ignored;
  for (int sig : kStopSignals) {
    struct sigaction now {};
    if (::sigaction(sig, nullptr, &now) == 0 && now.sa_handler == SIG_IGN) ignored.push_back(sig);
  }
  return ignored;
}

void become_child_subreaper() { ::prctl(PR_SET_CHILD_SUBREAPER, 1); }

std::vector<long> list_children() {
  std::vector<long> children;
  DIR* tasks = ::opendir("/proc/self/task");
  if (tasks == nullptr) return children;
  while (dirent* entry = ::readdir(tasks)) {
    if (entry->d_name[0] == '.') continue;
    std::ifstream file(std::string("/proc/self/task/") + entry->d_name + "/children");
    long pid = 0;
    while (file >> pid) children.push_back(pid);
  }
  ::closedir(tasks);
  return children;
}

std::vector<ExitEvent> reap_ended_children() {
  std::vector<ExitEvent> events;
  while (true) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) break;  // 0: none ended; -1/ECHILD: no children
    ExitEvent event;
    event.pid = pid;
    if (WIFEXITED(status)) event.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) event.signal = WTERMSIG(status);
    events.push_back(event);
  }
  return events;
}

Pipe make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw std::system_error(errno, std::generic_category(), "pipe2");
  }
  return Pipe{fds[0], fds[1]};
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

}  // namespace xlaunch::launcher
