// The spawner process: reads spawn requests, makes each worker with clone(CLONE_PARENT) and
// answers with its pid. It has one thread for its whole life, so it may allocate freely; the
// children it makes do only system calls between clone and exec all the same, with every
// array they need built before the clone (as CPython's _posixsubprocess and posix_spawn do).
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "launcher/containment_posix.hpp"
#include "launcher/process.hpp"
#include "launcher/spawn_protocol.hpp"
#include "launcher/spawner_impl.hpp"

// Raw numbers: glibc's close_range() wrapper is 2.34+, and its headers may predate 5.11.
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

namespace xlaunch::launcher {
namespace {

// Everything the child needs, prepared before clone: it may not allocate.
struct ChildPlan {
  const char* path;
  char* const* argv;
  char* const* envp;
  const char* cgroup_procs;  // null: none
  int stdout_fd;
  int stderr_fd;
  int status_fd;          // write end of the close-on-exec start-status pipe
  pid_t expected_parent;  // the launcher; 0 inside the run's PID namespace
  int group_registry;     // the guardian's socket, or -1 (SpawnRequest::register_group)
};

[[noreturn]] void fail(const ChildPlan& plan, StartStage stage, int error) {
  const std::int32_t message[2] = {static_cast<std::int32_t>(stage), error};
  // Under PIPE_BUF: one write, whole or not at all. If it fails the launcher sees the
  // exit status alone.
  [[maybe_unused]] ssize_t written = ::write(plan.status_fd, message, sizeof message);
  ::_exit(127);
}

// Between clone and exec: system calls only (no allocation, no lock, no stdio).
[[noreturn]] void run_child(const ChildPlan& plan) {
  // Before anything can fork: every descendant then inherits the run's cgroup. Failing
  // here fails the rank, rather than run a worker uncontained.
  if (plan.cgroup_procs != nullptr && !write_text(plan.cgroup_procs, "0")) {
    fail(plan, StartStage::join_cgroup, errno);
  }
  // Its own process group, so a terminal's Ctrl-C reaches only the launcher, which decides.
  // (The launcher makes the same call for it: whichever comes first.)
  ::setpgid(0, 0);
  if (plan.group_registry >= 0) {
    // Before it can start anything: the guardian kills this group should the launcher die.
    // (Unsent, the launcher registers it once it reads our pid.)
    const std::int32_t group = static_cast<std::int32_t>(::getpid());
    [[maybe_unused]] ssize_t sent = ::send(plan.group_registry, &group, sizeof group, MSG_NOSIGNAL);
  }
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The launcher may have died before prctl: then nothing would ever kill us.
  if (::getppid() != plan.expected_parent) ::_exit(1);
  // fd 0 is the spawner's /dev/null; the spawner's other descriptors are close-on-exec.
  if (::dup2(plan.stdout_fd, 1) < 0 || ::dup2(plan.stderr_fd, 2) < 0) {
    fail(plan, StartStage::redirect, errno);
  }
  // Default dispositions, then the empty mask: the spawner blocks every signal, so one
  // the launcher sent this new process group waits until it does what it should.
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD}) {
    ::sigaction(sig, &default_action, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // Only fds 0-2 reach the worker, whatever was left without O_CLOEXEC (kernels before
  // 5.11 lack the flag; everything of the spawner's is close-on-exec anyway).
  ::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
  ::execve(plan.path, plan.argv, plan.envp);
  fail(plan, StartStage::exec, errno);
}

// A worker's process, born in `cgroup_dir_fd` when it is >= 0. -1 with errno when it cannot
// be made.
long make_child(const ChildPlan& plan, int cgroup_dir_fd) {
  const long pid =
      cgroup_dir_fd >= 0 ? fork_into_cgroup(cgroup_dir_fd, CLONE_PARENT) : fork_bare(CLONE_PARENT);
  if (pid == 0) run_child(plan);
  return pid;
}

// The run's cgroup folder, opened once for every child born there.
int cgroup_dir_fd(const std::string& procs) {
  static std::string opened;
  static int fd = -1;
  const std::string dir = procs.substr(0, procs.rfind('/'));
  if (fd >= 0 && dir == opened) return fd;
  if (fd >= 0) ::close(fd);
  fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  opened = fd >= 0 ? dir : "";
  return fd;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

struct Received {
  std::string body;
  int fds[kMaxRequestFds] = {-1, -1, -1, -1};
  int fd_count = 0;

  void close_fds() {
    for (int i = 0; i < fd_count && i < kMaxRequestFds; ++i) ::close(fds[i]);
    fd_count = 0;
  }
  ~Received() { close_fds(); }
};

bool read_exactly(int socket, char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::recv(socket, data, size, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// One request: its header with the descriptors beside it, then the body. False at the end
// of the socket (the launcher is done or gone) or on a broken frame.
bool receive_request(int socket, Received& received) {
  char header[kSpawnHeaderSize];
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxRequestFds)];
  iovec part{header, sizeof header};
  msghdr message{};
  message.msg_iov = &part;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = ::recvmsg(socket, &message, MSG_CMSG_CLOEXEC | MSG_WAITALL);
  } while (n < 0 && errno == EINTR);
  for (cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr; c = CMSG_NXTHDR(&message, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int fd = -1;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      if (received.fd_count < kMaxRequestFds) {
        received.fds[received.fd_count++] = fd;
      } else {
        ::close(fd);  // more than any request has: the request is refused below
        received.fd_count = kMaxRequestFds + 1;
      }
    }
  }
  if (n != static_cast<ssize_t>(sizeof header) || (message.msg_flags & MSG_CTRUNC)) return false;
  const std::optional<std::uint32_t> size = decode_spawn_header({header, sizeof header});
  if (!size) return false;
  received.body.resize(*size);
  return read_exactly(socket, received.body.data(), received.body.size());
}

SpawnReply serve(Received& received, pid_t launcher) {
  std::optional<SpawnRequest> request = decode_spawn_body(received.body);
  if (!request) return {0, EINVAL};
  const int expected_fds =
      kRequestFds + (request->enter_pid_namespace || request->register_group ? 1 : 0);
  if (received.fd_count != expected_fds) return {0, EBADF};
  // The run's PID namespace for our next children; this process stays where it is.
  if (request->enter_pid_namespace && ::setns(received.fds[3], CLONE_NEWPID) != 0) {
    return {0, errno};
  }
  std::vector<char*> argv = pointers(request->argv);
  std::vector<char*> envp = pointers(request->envp);
  const ChildPlan plan{argv.front(),
                       argv.data(),
                       envp.data(),
                       request->cgroup_procs.empty() ? nullptr : request->cgroup_procs.c_str(),
                       received.fds[0],
                       received.fds[1],
                       received.fds[2],
                       request->enter_pid_namespace ? 0 : launcher,
                       request->register_group ? received.fds[3] : -1};
  // Like fork, but the child's parent is ours: the launcher reaps and supervises it. Born
  // in the run's cgroup when asked and the kernel can (no move: process.hpp), else it moves.
  long pid = -1;
  if (request->born_in_cgroup) {
    const int cgroup = cgroup_dir_fd(request->cgroup_procs);
    if (cgroup >= 0) {
      ChildPlan born = plan;
      born.cgroup_procs = nullptr;
      pid = make_child(born, cgroup);
    }
  }
  if (pid < 0) pid = make_child(plan, -1);
  if (pid < 0) return {0, errno};
  return {static_cast<std::int32_t>(pid), 0};
}

// No controlling terminal for this process, so none for anything it makes. A worker runs in
// a background process group of the launcher's terminal, where opening /dev/tty works but
// using it (a password prompt turning echo off, a read) stops the process for good
// (SIGTTOU/SIGTTIN) and hangs the job. Without one, /dev/tty fails at once (ENXIO), as in
// torchrun's workers, which start a session of their own. Not a session leader, this process
// loses only its own: the launcher and the shell keep theirs.
void leave_terminal() {
  const int tty = ::open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (tty < 0) return;  // none to leave
  ::ioctl(tty, TIOCNOTTY);
  ::close(tty);
}

// Holds nothing of the launcher's: a shell's or test's pipe must close when the launcher
// ends, whatever happens to this process.
void keep_only(int socket) {
  close_from(3, socket);
  const int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null_fd < 0) return;
  for (int target = 0; target <= 2; ++target) ::dup2(null_fd, target);
  if (null_fd > 2) ::close(null_fd);
}

}  // namespace

void spawner_main(int socket, pid_t launcher) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != launcher) ::_exit(0);
  ::prctl(PR_SET_NAME, "xlaunch-spawner");
  // Out of the terminal's process group: a Ctrl-C is the launcher's to handle, and must not
  // reach a child before it has its own group.
  ::setpgid(0, 0);
  // Every signal blocked: none can end the spawner (the launcher ends it) or run a handler
  // in a child before the child resets its dispositions.
  sigset_t all;
  sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, nullptr);
  leave_terminal();
  keep_only(socket);
  while (true) {
    Received received;
    if (!receive_request(socket, received)) ::_exit(0);
    const std::string reply = encode_spawn_reply(serve(received, launcher));
    // Our copy of the status pipe's write end goes before the launcher learns the pid: from
    // then on only the child holds it, and its end of file means exec (or death).
    received.close_fds();
    if (::send(socket, reply.data(), reply.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(reply.size())) {
      ::_exit(0);
    }
  }
}

}  // namespace xlaunch::launcher
