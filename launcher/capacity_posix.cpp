// The OS side of the capacity check: resource limits and what this user already runs.
#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <fstream>
#include <sstream>
#include <string>

#include "launcher/capacity.hpp"
#include "rendezvous/store_server.hpp"

namespace xlaunch::launcher {
namespace {

bool all_digits(const char* name) {
  if (*name == '\0') return false;
  for (; *name != '\0'; ++name) {
    if (!std::isdigit(static_cast<unsigned char>(*name))) return false;
  }
  return true;
}

/// Threads of one process (RLIMIT_NPROC counts threads): field 20 of /proc/PID/stat.
std::uint64_t thread_count(const std::string& pid) {
  std::ifstream in("/proc/" + pid + "/stat");
  std::string line;
  if (!std::getline(in, line)) return 1;
  // The command name (field 2) may hold blanks and ')', so fields are counted after the last.
  std::istringstream rest(line.substr(line.rfind(')') + 1));
  std::string field;
  std::uint64_t threads = 1;
  for (int i = 3; i <= 20 && rest >> field; ++i) {
    if (i == 20) threads = std::stoull(field);
  }
  return threads;
}

/// Processes and threads owned by `uid` (a /proc/PID folder belongs to the process's user).
std::uint64_t user_tasks(uid_t uid) {
  std::uint64_t tasks = 0;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return 0;
  while (dirent* entry = ::readdir(proc)) {
    if (!all_digits(entry->d_name)) continue;
    struct stat st {};
    const std::string pid = entry->d_name;
    if (::stat(("/proc/" + pid).c_str(), &st) != 0 || st.st_uid != uid) continue;
    try {
      tasks += thread_count(pid);
    } catch (const std::exception&) {
      tasks += 1;  // it ended while being read
    }
  }
  ::closedir(proc);
  return tasks;
}

std::uint64_t open_descriptors() {
  std::uint64_t count = 0;
  DIR* fds = ::opendir("/proc/self/fd");
  if (fds == nullptr) return 0;
  while (dirent* entry = ::readdir(fds)) {
    if (all_digits(entry->d_name)) ++count;
  }
  ::closedir(fds);
  return count > 0 ? count - 1 : 0;  // not the one reading the folder
}

}  // namespace

CapacityLimits read_capacity_limits() {
  CapacityLimits out;
  // The launcher raises it before starting workers; count what it will then have.
  rendezvous::raise_open_file_limit();
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
    out.max_open_files = lim.rlim_cur;
  }
  out.open_files = open_descriptors();
  // The kernel does not hold root to RLIMIT_NPROC.
  if (::geteuid() != 0 && ::getrlimit(RLIMIT_NPROC, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
    out.max_user_processes = lim.rlim_cur;
    out.user_processes = user_tasks(::getuid());
  }
  return out;
}

}  // namespace xlaunch::launcher
