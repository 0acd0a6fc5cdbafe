// The launcher's side of the spawner: forking it, asking it for each worker, ending it.
#include <fcntl.h>
#include <fmt/core.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include "launcher/containment_posix.hpp"
#include "launcher/exit_status.hpp"
#include "launcher/launch_error.hpp"
#include "launcher/process.hpp"
#include "launcher/spawn_protocol.hpp"
#include "launcher/spawner.hpp"
#include "launcher/spawner_impl.hpp"

namespace xlaunch::launcher {
namespace {

// The spawner answers right after its clone(): a spawner silent this long is stopped or
// broken, and the rank it was asked for fails rather than the launcher waiting for ever.
constexpr long kAnswerMs = 30'000;

struct Running {
  long pid = -1;
  int fd = -1;  // -1 once it failed: later requests fail at once
};
Running running;

// Waits until `fd` is ready for `events` or the deadline passes.
bool wait_ready(int fd, short events, long deadline_ms) {
  while (true) {
    const long left = deadline_ms - monotonic_ms();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    return n == 1;
  }
}

}  // namespace

bool send_spawn_request(int socket, std::string_view frame, const int* fds, int fd_count,
                        long deadline_ms) {
  // The header carries the descriptors; the body follows as the spawner reads it.
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxRequestFds)] = {};
  iovec part{const_cast<char*>(frame.data()), kSpawnHeaderSize};
  msghdr message{};
  message.msg_iov = &part;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = CMSG_SPACE(sizeof(int) * fd_count);
  cmsghdr* c = CMSG_FIRSTHDR(&message);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int) * fd_count);
  std::memcpy(CMSG_DATA(c), fds, sizeof(int) * fd_count);
  // Within the deadline like the body: requests sent ahead may fill the socket of a spawner
  // that stopped answering.
  ssize_t n;
  while (true) {
    n = ::sendmsg(socket, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0 || (errno != EINTR && errno != EAGAIN)) break;
    if (errno == EAGAIN && !wait_ready(socket, POLLOUT, deadline_ms)) return false;
  }
  if (n != static_cast<ssize_t>(kSpawnHeaderSize)) return false;
  frame.remove_prefix(kSpawnHeaderSize);
  while (!frame.empty()) {
    if (!wait_ready(socket, POLLOUT, deadline_ms)) return false;
    n = ::send(socket, frame.data(), frame.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return false;
    frame.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

bool receive_exactly(int socket, char* data, std::size_t size, long deadline_ms) {
  std::size_t have = 0;
  while (have < size) {
    if (!wait_ready(socket, POLLIN, deadline_ms)) return false;
    const ssize_t n = ::recv(socket, data + have, size - have, MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return false;
    have += static_cast<std::size_t>(n);
  }
  return true;
}

std::optional<SpawnReply> receive_spawn_reply(int socket, long deadline_ms) {
  char bytes[kSpawnReplySize];
  if (!receive_exactly(socket, bytes, sizeof bytes, deadline_ms)) return std::nullopt;
  return decode_spawn_reply({bytes, sizeof bytes});
}

namespace {

// Kills and reaps the spawner unless something reaped it already (then its pid may belong
// to another process now: no signal).
void end_spawner(long pid) {
  int status = 0;
  const pid_t done = ::waitpid(static_cast<pid_t>(pid), &status, WNOHANG);
  if (done != 0) return;  // reaped now, or gone (ECHILD)
  ::kill(static_cast<pid_t>(pid), SIGKILL);
  wait_for(pid);
}

}  // namespace

Spawner Spawner::start() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    throw LaunchError("cannot start the spawner: socketpair: " + errno_text(errno),
                      exit_status::kFailure);
  }
  const pid_t launcher = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[1]);
    spawner_main(fds[0], launcher);
  }
  const int error = errno;
  ::close(fds[0]);
  if (pid < 0) {
    ::close(fds[1]);
    throw LaunchError("cannot start the spawner: fork: " + errno_text(error),
                      exit_status::kFailure);
  }
  running = {pid, fds[1]};
  return Spawner(pid, fds[1]);
}

Spawner::Spawner(Spawner&& other) noexcept : pid_(other.pid_), fd_(other.fd_) {
  other.pid_ = -1;
  other.fd_ = -1;
}

Spawner::~Spawner() {
  if (pid_ < 0) return;
  if (running.pid == pid_) {
    close_fd(running.fd);
    running = {};
  }
  end_spawner(pid_);
}

long spawner_pid() { return running.pid; }

bool spawner_usable() { return running.fd >= 0; }

namespace {

// Silent, gone or garbled: it serves no one else in this run.
[[noreturn]] void give_up_on_spawner(long deadline) {
  const bool timed_out = monotonic_ms() >= deadline;
  if (timed_out) ::kill(static_cast<pid_t>(running.pid), SIGKILL);  // not reaped: it is ours
  close_fd(running.fd);
  throw std::runtime_error(timed_out ? fmt::format("the spawner (pid {}) did not answer within "
                                                   "{} s",
                                                   running.pid, kAnswerMs / 1000)
                                     : fmt::format("the spawner (pid {}) is gone", running.pid));
}

void check_spawner_usable() {
  if (running.fd < 0) {
    throw std::runtime_error(running.pid < 0 ? "no spawner is running"
                                             : "the spawner failed earlier in this run");
  }
}

}  // namespace

void request_worker(const SpawnSpec& spec) {
  check_spawner_usable();
  const WorkerPlacement& place = worker_placement();
  const bool in_namespace = place.pid_namespace >= 0;
  const bool registers = !in_namespace && place.group_registry >= 0;
  const std::string cgroup_procs = spec.in_run_cgroup ? place.cgroup_procs : "";
  const std::string frame =
      encode_spawn_request({spec.argv, spec.envp, cgroup_procs, in_namespace,
                            place.born_in_cgroup && !cgroup_procs.empty(), registers});
  const int fds[kMaxRequestFds] = {spec.stdout_fd, spec.stderr_fd, spec.status_fd,
                                   in_namespace ? place.pid_namespace : place.group_registry};
  const long deadline = monotonic_ms() + kAnswerMs;
  const int fd_count = kRequestFds + (in_namespace || registers ? 1 : 0);
  if (!send_spawn_request(running.fd, frame, fds, fd_count, deadline)) {
    give_up_on_spawner(deadline);
  }
}

long await_worker() {
  check_spawner_usable();
  const long deadline = monotonic_ms() + kAnswerMs;
  const std::optional<SpawnReply> reply = receive_spawn_reply(running.fd, deadline);
  if (!reply) give_up_on_spawner(deadline);
  if (reply->error != 0) {
    throw std::system_error(reply->error, std::generic_category(), "clone");
  }
  // Its group exists before the launcher can signal it (EACCES once it exec'd: harmless).
  ::setpgid(reply->pid, reply->pid);
  return reply->pid;
}

long spawn_worker(const SpawnSpec& spec) {
  request_worker(spec);
  return await_worker();
}

}  // namespace xlaunch::launcher
