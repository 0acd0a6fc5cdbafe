#include <dirent.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "config/atomic_write.hpp"
#include "diagnose/stacks_registry.hpp"

namespace xlaunch::diagnose {

LauncherRegistration::LauncherRegistration(std::string dir, std::string run_id)
    : dir_(std::move(dir)), run_id_(std::move(run_id)) {
  // Private to the user: the pid file tells `xlaunch stacks` whom to signal.
  ::mkdir(dir_.c_str(), 0700);
  try {
    config::atomic_write(dir_ + "/" + run_id_ + ".pid", std::to_string(::getpid()) + "\n");
    written_ = true;
  } catch (const std::exception&) {
    // Without it only `kill -USR1 <pid>` finds this launcher; nothing else depends on it.
  }
}

LauncherRegistration::~LauncherRegistration() {
  if (!written_) return;
  ::unlink((dir_ + "/" + run_id_ + ".pid").c_str());
  ::unlink(stacks_path().c_str());
}

void LauncherRegistration::publish_stacks(const std::string& text) const {
  if (!written_) return;
  try {
    config::atomic_write(stacks_path(), text);
  } catch (const std::exception&) {
  }
}

std::vector<std::string> LauncherRegistration::requests() const {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir_.c_str());
  if (!d) return out;
  const std::string prefix = run_id_ + ".want.";
  while (dirent* e = ::readdir(d)) {
    if (std::string(e->d_name).rfind(prefix, 0) == 0) out.push_back(dir_ + "/" + e->d_name);
  }
  ::closedir(d);
  return out;
}

void LauncherRegistration::answer(const std::vector<std::string>& requests) const {
  for (const std::string& path : requests) ::unlink(path.c_str());
}

std::vector<RunningLauncher> running_launchers(const std::string& dir) {
  std::vector<RunningLauncher> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.size() <= 4 || name.compare(name.size() - 4, 4, ".pid") != 0) continue;
    std::ifstream in(dir + "/" + name);
    long pid = 0;
    if (!(in >> pid) || pid <= 0) continue;
    // A launcher killed with SIGKILL leaves its file behind: skip the dead.
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) continue;
    out.push_back({name.substr(0, name.size() - 4), pid});
  }
  ::closedir(d);
  return out;
}

int ask_for_stacks(const std::string& dir, const std::optional<std::string>& run_id,
                   std::chrono::milliseconds wait) {
  std::vector<RunningLauncher> all = running_launchers(dir);
  std::vector<RunningLauncher> match;
  for (const RunningLauncher& l : all) {
    if (!run_id || l.run_id == *run_id) match.push_back(l);
  }
  if (match.size() != 1) {
    if (match.empty()) {
      fmt::print(stderr, "xlaunch stacks: no running launcher{} (looked in {})\n",
                 run_id ? " with run id " + *run_id : "", dir);
    } else {
      fmt::print(stderr, "xlaunch stacks: {} launchers are running; name one:\n", match.size());
    }
    for (const RunningLauncher& l : all) {
      fmt::print(stderr, "  xlaunch stacks {}    (pid {})\n", l.run_id, l.pid);
    }
    return 2;
  }
  const RunningLauncher& l = match.front();
  const std::string path = dir + "/" + l.run_id + ".stacks";
  // The launcher removes this file once a dump that started after it was published.
  const std::string want = fmt::format("{}/{}.want.{}", dir, l.run_id, ::getpid());
  try {
    config::atomic_write(want, "");
  } catch (const std::exception& e) {
    fmt::print(stderr, "xlaunch stacks: {}\n", e.what());
    return 1;
  }
  if (::kill(static_cast<pid_t>(l.pid), SIGUSR1) != 0) {
    fmt::print(stderr, "xlaunch stacks: cannot signal pid {}: {}\n", l.pid, std::strerror(errno));
    ::unlink(want.c_str());
    return 1;
  }
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (std::chrono::steady_clock::now() < deadline) {
    struct stat now {};
    if (::stat(want.c_str(), &now) != 0) {
      std::ifstream in(path);
      std::ostringstream text;
      text << in.rdbuf();
      fmt::print("{}", text.str());
      return 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::unlink(want.c_str());
  fmt::print(stderr, "xlaunch stacks: launcher {} (pid {}) did not answer within {}s\n", l.run_id,
             l.pid, wait.count() / 1000);
  return 1;
}

}  // namespace xlaunch::diagnose
