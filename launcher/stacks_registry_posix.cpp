#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>

#include "config/atomic_write.hpp"
#include "launcher/stacks_registry.hpp"

namespace xlaunch::launcher {

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

}  // namespace xlaunch::launcher
