// The launcher's side of the preloading template: a socketpair whose far end is the
// template's stdout, the template's one answer, then spawn requests as the spawner gets them.
#include <fmt/format.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include "launcher/containment_posix.hpp"
#include "launcher/preload_template.hpp"
#include "launcher/spawn_protocol.hpp"
#include "launcher/spawner_impl.hpp"

namespace xlaunch::launcher {
namespace {

// The template answers right after its fork: one silent this long is stopped or broken.
constexpr long kAnswerMs = 30'000;
// The longest refusal read; the rest is cut.
constexpr std::uint32_t kMaxAnswer = 4096;

long running_pid = -1;

// A pid from the template is input to check: it must be a child of this process (adopted
// once the template's middle process was reaped, before the template answered).
bool is_our_child(long pid) {
  if (pid <= 1 || pid == ::getpid()) return false;
  siginfo_t info{};
  return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0;
}

}  // namespace

std::unique_ptr<PreloadTemplate> PreloadTemplate::start(const std::vector<std::string>& argv,
                                                        const std::vector<std::string>& envp,
                                                        int stderr_fd) {
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) {
    throw std::system_error(errno, std::generic_category(), "socketpair");
  }
  Pipe status = make_pipe();
  SpawnSpec spec{argv, envp, ends[1], stderr_fd, status.write_fd};
  spec.in_run_cgroup = false;
  long pid = -1;
  try {
    pid = spawn_worker(spec);
  } catch (...) {
    for (int fd : {ends[0], ends[1], status.read_fd, status.write_fd}) ::close(fd);
    throw;
  }
  // Whether it execs shows as its answer or the end of the socket.
  for (int fd : {ends[1], status.read_fd, status.write_fd}) ::close(fd);
  running_pid = pid;
  return std::unique_ptr<PreloadTemplate>(new PreloadTemplate(pid, ends[0]));
}

PreloadTemplate::~PreloadTemplate() {
  if (running_pid == pid_) running_pid = -1;
  ::close(fd_);         // the template exits at the end of its socket
  if (reaped_) return;  // its pid may be another process's by now
  int status = 0;
  if (::waitpid(static_cast<pid_t>(pid_), &status, WNOHANG) != 0) return;  // reaped, or gone
  // Its process group (it leads one, as every worker): a child it forked for its own check
  // is in it too, and must not outlive the job. Ranks have groups of their own.
  ::kill(-static_cast<pid_t>(pid_), SIGKILL);
  while (::waitpid(static_cast<pid_t>(pid_), &status, 0) < 0 && errno == EINTR) {
  }
}

std::string PreloadTemplate::read_answer() {
  // Called once the socket is readable: the answer, a few bytes, follows at once.
  const long deadline = monotonic_ms() + kAnswerMs;
  std::uint32_t size = 0;
  if (!receive_exactly(fd_, reinterpret_cast<char*>(&size), sizeof size, deadline)) {
    return fmt::format(
        "the template (pid {}) ended before it answered; its output is in the "
        "run's preload.log",
        pid_);
  }
  std::string text(std::min(size, kMaxAnswer), '\0');
  if (!receive_exactly(fd_, text.data(), text.size(), deadline)) {
    return "the template's answer was cut";
  }
  return text;
}

void PreloadTemplate::mark_reaped() {
  reaped_ = true;
  if (running_pid == pid_) running_pid = -1;
}

long PreloadTemplate::spawn(const SpawnSpec& spec) {
  std::vector<std::string> envp = spec.envp;
  envp.push_back(fmt::format("XLAUNCH_PRELOAD_TEMPLATE={}", pid_));
  const std::string frame =
      encode_spawn_request({spec.argv, envp, worker_placement().cgroup_procs, false});
  // The rank waits for a byte on this pipe before it runs anything of the program: one the
  // launcher does not take as its own (a late or wrong answer) reads end of file and exits,
  // and never runs beside the rank started in its place.
  Pipe go = make_pipe();
  const int fds[kRequestFds + 1] = {spec.stdout_fd, spec.stderr_fd, spec.status_fd, go.read_fd};
  const long deadline = monotonic_ms() + kAnswerMs;
  std::optional<SpawnReply> reply;
  if (send_spawn_request(fd_, frame, fds, kRequestFds + 1, deadline)) {
    reply = receive_spawn_reply(fd_, deadline);
  }
  close_fd(go.read_fd);
  if (!reply || reply->error != 0 || !is_our_child(reply->pid)) close_fd(go.write_fd);
  if (!reply) {
    throw std::runtime_error(
        fmt::format("the preload template (pid {}) {}", pid_,
                    monotonic_ms() >= deadline ? "did not answer in time" : "is gone"));
  }
  if (reply->error != 0) throw std::system_error(reply->error, std::generic_category(), "fork");
  if (go.write_fd < 0) {
    throw std::runtime_error(
        fmt::format("the preload template (pid {}) answered pid {}, which "
                    "is not a child of the launcher",
                    pid_, reply->pid));
  }
  [[maybe_unused]] const ssize_t sent = ::write(go.write_fd, "g", 1);
  close_fd(go.write_fd);
  return reply->pid;
}

long preload_template_pid() { return running_pid; }

}  // namespace xlaunch::launcher
