// Asks other interpreters whether they have torch: one short-lived process each, spawned
// with posix_spawn (safe in a process that has threads), given a few seconds at most.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <thread>

#include "launcher/torch_hint.hpp"

extern char** environ;

namespace xlaunch::launcher {
namespace {

// find_spec locates torch without importing it (an import takes seconds, and may fail for
// reasons of its own).
constexpr const char* kFindsTorch =
    "import importlib.util, sys\n"
    "sys.exit(0 if importlib.util.find_spec('torch') is not None else 3)\n";
constexpr int kMaxAsked = 6;
constexpr auto kTimeLimit = std::chrono::seconds(10);

std::optional<std::string> real_path(const std::string& path) {
  char* resolved = ::realpath(path.c_str(), nullptr);
  if (resolved == nullptr) return std::nullopt;
  std::string out(resolved);
  std::free(resolved);
  return out;
}

// Which Python `path` is: its executable, and the virtual environment it belongs to, if any
// (a venv's python is a link to the base interpreter, but finds other packages).
std::optional<std::string> identity(const std::string& path) {
  std::optional<std::string> real = real_path(path);
  if (!real) return std::nullopt;
  const std::filesystem::path venv = std::filesystem::path(path).parent_path().parent_path();
  std::error_code ec;
  if (std::filesystem::exists(venv / "pyvenv.cfg", ec)) {
    *real += " in " + real_path(venv.string()).value_or(venv.string());
  }
  return real;
}

bool finds_torch(const std::string& python) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  for (int fd : {0, 1, 2}) {
    posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0);
  }
  std::string program = python;
  std::string flag = "-c";
  std::string script = kFindsTorch;
  char* argv[] = {program.data(), flag.data(), script.data(), nullptr};
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, program.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return false;
  const auto deadline = std::chrono::steady_clock::now() + kTimeLimit;
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) return false;
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

std::optional<std::string> find_python_with_torch(const Environment& env, const std::string& ran) {
  std::set<std::string> seen;
  if (auto self = identity(ran)) seen.insert(*self);
  int asked = 0;
  for (const std::string& candidate : python_candidates(env)) {
    if (::access(candidate.c_str(), X_OK) != 0) continue;
    const std::optional<std::string> which = identity(candidate);
    if (!which || !seen.insert(*which).second) continue;
    if (asked++ == kMaxAsked) break;
    if (finds_torch(candidate)) return candidate;
  }
  return std::nullopt;
}

}  // namespace xlaunch::launcher
