// Process control for workers: signals, reaping, descriptors. Workers themselves are made by
// the spawner (spawner_posix.cpp, spawn_client_posix.cpp).
#include <dirent.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "diagnose/proc_net.hpp"
#include "launcher/process.hpp"

// Raw number: glibc's close_range() wrapper is 2.34+, and its headers may predate 5.11.
#ifndef SYS_close_range
#define SYS_close_range 436
#endif

namespace xlaunch::launcher {

long fork_bare(unsigned long extra_flags) {
  // A raw system call: glibc's fork() runs the atfork handlers, and its child-side fix-ups
  // matter only to code that uses libc's state (threads, malloc), which these children don't.
  return ::syscall(SYS_clone, extra_flags | SIGCHLD, 0L, 0L, 0L, 0L);
}

long fork_into_cgroup(int cgroup_dir_fd, unsigned long extra_flags) {
  // The raw system call for the reason above. No stack given: the child runs on a copy of
  // ours, as after fork.
  clone_args args{};
  args.flags = extra_flags | CLONE_INTO_CGROUP;
  // With CLONE_PARENT clone3 wants none: the child's is the parent's (SIGCHLD) anyway.
  args.exit_signal = (extra_flags & CLONE_PARENT) != 0 ? 0 : SIGCHLD;
  args.cgroup = static_cast<std::uint64_t>(cgroup_dir_fd);
  return ::syscall(SYS_clone3, &args, sizeof args);
}

WorkerPlacement& worker_placement() {
  static WorkerPlacement placement;
  return placement;
}

void signal_group(long pgid, int signal) {
  if (pgid > 0) ::kill(static_cast<pid_t>(-pgid), signal);  // ESRCH: already gone
}

bool group_exists(long pgid) {
  return pgid > 0 && (::kill(static_cast<pid_t>(-pgid), 0) == 0 || errno == EPERM);
}

bool process_exists(long pid) {
  return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
}

void reserve_standard_fds() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    // Opened lowest-first, /dev/null lands on this very number.
    int null_fd = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
    if (null_fd >= 0 && null_fd != fd) ::close(null_fd);
  }
}

void restore_default_sigchld() {
  struct sigaction current {};
  if (::sigaction(SIGCHLD, nullptr, &current) != 0 || current.sa_handler != SIG_IGN) return;
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  ::sigaction(SIGCHLD, &default_action, nullptr);
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

void keep_pending(int signal) { ::raise(signal); }

std::optional<int> pending_stop_signal() {
  sigset_t pending;
  if (::sigpending(&pending) != 0) return std::nullopt;
  for (int sig : kStopSignals) {
    // Held, an ignored signal is still queued (Linux): it must not count.
    struct sigaction now {};
    if (sigismember(&pending, sig) == 1 && ::sigaction(sig, nullptr, &now) == 0 &&
        now.sa_handler != SIG_IGN) {
      return sig;
    }
  }
  return std::nullopt;
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

namespace {
std::vector<long> children_in(const std::string& proc_dir) {
  std::vector<long> children;
  DIR* tasks = ::opendir((proc_dir + "/task").c_str());
  if (tasks == nullptr) return children;
  while (dirent* entry = ::readdir(tasks)) {
    if (entry->d_name[0] == '.') continue;
    std::ifstream file(proc_dir + "/task/" + entry->d_name + "/children");
    long pid = 0;
    while (file >> pid) children.push_back(pid);
  }
  ::closedir(tasks);
  return children;
}
}  // namespace

std::vector<long> list_children() { return children_in("/proc/self"); }

std::vector<long> list_children(long pid) { return children_in("/proc/" + std::to_string(pid)); }

namespace {
// One process of a tree being killed: `parent` is the one it was listed under (0: a child of
// this process, whose pid stays its own until we reap it).
struct TreeMember {
  long pid;
  long parent;
};

// A process held for good through a pidfd (Linux 5.3), whatever becomes of its pid; `fd` is
// -1 where there is none (an old kernel, a filter, no descriptor left), and `gone` says the
// process had already ended.
struct Held {
  int fd = -1;
  bool gone = false;
  explicit Held(long pid) {
    fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    gone = fd < 0 && errno == ESRCH;
  }
  ~Held() {
    if (fd >= 0) ::close(fd);
  }
  Held(const Held&) = delete;
  Held& operator=(const Held&) = delete;
};

// Whether `m` is still its parent's child. A process whose /proc entry cannot be read for
// want of a descriptor counts as one: a process left running is the worse harm.
bool still_its_parents(const TreeMember& m) {
  if (m.parent == 0) return true;
  const int fd = ::open(("/proc/" + std::to_string(m.pid) + "/stat").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno != ENOENT && errno != ESRCH;
  char text[1024];
  const ssize_t got = ::read(fd, text, sizeof(text));
  ::close(fd);
  if (got <= 0) return false;
  const auto stat =
      diagnose::parse_proc_stat(std::string_view(text, static_cast<std::size_t>(got)));
  return stat && stat->ppid == m.parent;
}

// Sends `signal` through `held`'s pidfd, else by pid; false when the process is gone.
bool send(long pid, const Held& held, int signal) {
  if (held.gone) return false;
  if (held.fd >= 0) {
    if (::syscall(SYS_pidfd_send_signal, held.fd, signal, nullptr, 0) == 0) return true;
    if (errno == ESRCH) return false;
  }
  return ::kill(static_cast<pid_t>(pid), signal) == 0;
}
}  // namespace

void kill_process_trees(const std::vector<long>& roots) {
  constexpr std::size_t kMostProcesses = 4096;
  std::vector<TreeMember> doomed;
  for (long pid : roots) doomed.push_back({pid, 0});
  for (std::size_t i = 0; i < doomed.size(); ++i) {
    const TreeMember m = doomed[i];
    const Held held(m.pid);  // checked after the pidfd is taken: then both are of one process
    if (!still_its_parents(m) || !send(m.pid, held, SIGSTOP)) continue;
    if (doomed.size() >= kMostProcesses) continue;
    const std::vector<long> children = list_children(m.pid);
    // Listed while it still lived, so under its own pid and not a successor's.
    if (held.fd >= 0 && ::syscall(SYS_pidfd_send_signal, held.fd, 0, nullptr, 0) != 0 &&
        errno == ESRCH)
      continue;
    for (long child : children) doomed.push_back({child, m.pid});
  }
  // The deepest first: a parent killed first would hand its children to this subreaper, and
  // they would no longer be its children when checked. Stopped, none reaps or forks meanwhile.
  for (auto m = doomed.rbegin(); m != doomed.rend(); ++m) {
    const Held held(m->pid);
    if (still_its_parents(*m)) send(m->pid, held, SIGKILL);
  }
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

void resize_pipe(int fd, std::size_t bytes) {
  if (bytes > 0) ::fcntl(fd, F_SETPIPE_SZ, static_cast<int>(bytes));
}

std::uint64_t pipe_user_pages_soft() {
  std::uint64_t pages = 0;
  if (std::ifstream("/proc/sys/fs/pipe-user-pages-soft") >> pages) return pages;
  return 16384;
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

// Closes every descriptor from `first` on except `keep`; /proc/self/fd where the kernel
// has no close_range (before 5.9).
void close_from(int first, int keep) {
  const auto upto = static_cast<unsigned>(keep - 1);
  const bool closed = (keep <= first || ::syscall(SYS_close_range, first, upto, 0U) == 0) &&
                      ::syscall(SYS_close_range, static_cast<unsigned>(keep + 1), ~0U, 0U) == 0;
  if (closed) return;
  std::vector<int> open_fds;
  if (DIR* dir = ::opendir("/proc/self/fd")) {
    while (dirent* entry = ::readdir(dir)) {
      const int fd = std::atoi(entry->d_name);
      if (entry->d_name[0] != '.' && fd >= first && fd != keep && fd != ::dirfd(dir)) {
        open_fds.push_back(fd);
      }
    }
    ::closedir(dir);
  }
  for (int fd : open_fds) ::close(fd);
}

}  // namespace xlaunch::launcher
