// The spawner for real: this test binary forks one (it has a single thread) and asks it for
// processes.
#include "launcher/spawner.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <string>

#include "launcher/process.hpp"
#include "launcher/spawn_protocol.hpp"

using namespace xlaunch::launcher;

namespace {

std::string read_to_end(int fd) {
  std::string text;
  char chunk[4096];
  ssize_t n;
  while ((n = ::read(fd, chunk, sizeof chunk)) != 0) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    text.append(chunk, static_cast<std::size_t>(n));
  }
  return text;
}

struct Started {
  long pid = -1;
  std::string status;  // what the start-status pipe said: "" once it exec'd
  std::string out;
  int wait_status = 0;
};

// Starts `argv`, reads everything, reaps it.
Started run(std::vector<std::string> argv, std::vector<std::string> env = {}) {
  Pipe out = make_pipe();
  Pipe status = make_pipe();
  Started s;
  s.pid =
      spawn_worker({std::move(argv), std::move(env), out.write_fd, out.write_fd, status.write_fd});
  close_fd(out.write_fd);
  close_fd(status.write_fd);
  s.status = read_to_end(status.read_fd);
  s.out = read_to_end(out.read_fd);
  close_fd(status.read_fd);
  close_fd(out.read_fd);
  REQUIRE(::waitpid(static_cast<pid_t>(s.pid), &s.wait_status, 0) == s.pid);  // our child
  return s;
}

}  // namespace

TEST_CASE("a worker is our child, in its own group, with fds 0-2 only and no blocked signal",
          "[spawn]") {
  Spawner spawner = Spawner::start();
  REQUIRE(spawner.pid() > 0);
  CHECK(spawner_pid() == spawner.pid());
  const Started s = run({"/bin/sh", "-c",
                         "echo ppid=$PPID; echo fds:; ls /proc/$$/fd; echo :fds; "
                         "echo pgrp=$(cut -d' ' -f5 /proc/$$/stat) pid=$$; "
                         // The shell blocks every signal around its own forks: the mask
                         // is read by what it execs, which has the shell's steady mask.
                         "echo env=$ONLY; exec grep SigBlk /proc/self/status"},
                        {"ONLY=this", "PATH=/usr/bin:/bin"});
  INFO(s.out);
  CHECK(s.status.empty());
  CHECK(WIFEXITED(s.wait_status));
  CHECK(WEXITSTATUS(s.wait_status) == 0);
  CHECK(s.out.find("ppid=" + std::to_string(::getpid()) + "\n") != std::string::npos);
  // Listed without a command substitution, whose pipe the shell itself would hold.
  CHECK(s.out.find("fds:\n0\n1\n2\n:fds\n") != std::string::npos);
  CHECK(s.out.find("pgrp=" + std::to_string(s.pid) + " pid=" + std::to_string(s.pid)) !=
        std::string::npos);
  CHECK(s.out.find("SigBlk:\t0000000000000000") != std::string::npos);
  CHECK(s.out.find("env=this\n") != std::string::npos);
}

TEST_CASE("a program that cannot be executed says why through the status pipe", "[spawn]") {
  Spawner spawner = Spawner::start();
  const Started s = run({"/nonexistent/program"});
  const std::optional<StartFailure> failure = decode_start_failure(s.status);
  REQUIRE(failure);
  CHECK(failure->stage == StartStage::exec);
  CHECK(failure->error == ENOENT);
  CHECK(WIFEXITED(s.wait_status));
  CHECK(WEXITSTATUS(s.wait_status) == 127);
  // The spawner serves on after a failure.
  CHECK(run({"/bin/true"}).status.empty());
}

TEST_CASE("without a spawner, or after it died, spawning fails with the reason", "[spawn]") {
  Pipe out = make_pipe();
  CHECK_THROWS_WITH(spawn_worker({{"/bin/true"}, {}, out.write_fd, out.write_fd, out.write_fd}),
                    Catch::Contains("no spawner"));
  {
    Spawner spawner = Spawner::start();
    ::kill(static_cast<pid_t>(spawner.pid()), SIGKILL);
    int status = 0;
    REQUIRE(::waitpid(static_cast<pid_t>(spawner.pid()), &status, 0) == spawner.pid());
    CHECK_THROWS_WITH(spawn_worker({{"/bin/true"}, {}, out.write_fd, out.write_fd, out.write_fd}),
                      Catch::Contains("is gone"));
    CHECK_THROWS_WITH(spawn_worker({{"/bin/true"}, {}, out.write_fd, out.write_fd, out.write_fd}),
                      Catch::Contains("failed earlier"));
  }  // its destructor finds it reaped already and signals nothing
  CHECK(spawner_pid() == -1);
  close_fd(out.read_fd);
  close_fd(out.write_fd);
}

TEST_CASE("the spawner ends with its owner and leaves no child behind", "[spawn]") {
  long pid = -1;
  {
    Spawner spawner = Spawner::start();
    pid = spawner.pid();
  }
  errno = 0;
  CHECK(::waitpid(static_cast<pid_t>(pid), nullptr, WNOHANG) == -1);
  CHECK(errno == ECHILD);
}
