// The run's cgroup: where it goes, whether a process can join it, killing everything in it
// and removing it. The kill and removal run in the guardian too: async-signal-safe only.
#include <fcntl.h>
#include <fmt/core.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include <cstring>
#include <system_error>

#include "launcher/containment_posix.hpp"
#include "launcher/random_bits.hpp"
#include "launcher/run_files.hpp"

namespace xlaunch::launcher {
namespace {

// "populated 0" in cgroup.events; an unreadable file counts as empty (the cgroup is gone).
bool cgroup_empty(int events_fd) {
  char text[512];
  ssize_t n = ::pread(events_fd, text, sizeof(text) - 1, 0);
  if (n <= 0) return true;
  text[n] = '\0';
  const char* populated = std::strstr(text, "populated ");
  return populated == nullptr || populated[10] == '0';
}

// Kernels before 5.14 have no cgroup.kill: SIGKILL each pid cgroup.procs lists.
void kill_listed(const char* procs_path) {
  int fd = ::open(procs_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char chunk[4096];
  long pid = 0;
  ssize_t n;
  while ((n = ::read(fd, chunk, sizeof(chunk))) > 0) {
    for (ssize_t i = 0; i < n; ++i) {
      if (chunk[i] >= '0' && chunk[i] <= '9') {
        pid = pid * 10 + (chunk[i] - '0');
      } else {
        if (pid > 0) ::kill(static_cast<pid_t>(pid), SIGKILL);
        pid = 0;
      }
    }
  }
  if (pid > 0) ::kill(static_cast<pid_t>(pid), SIGKILL);
  ::close(fd);
}

}  // namespace

std::string errno_text(int error) { return std::generic_category().message(error); }

CgroupPaths cgroup_paths(const std::string& dir) {
  CgroupPaths paths;
  auto put = [&](char(&out)[PATH_MAX], const std::string& value) {
    if (value.size() >= PATH_MAX) throw std::runtime_error("cgroup path too long: " + value);
    std::memcpy(out, value.c_str(), value.size() + 1);
  };
  put(paths.dir, dir);
  put(paths.kill, dir + "/cgroup.kill");
  put(paths.procs, dir + "/cgroup.procs");
  put(paths.events, dir + "/cgroup.events");
  return paths;
}

long monotonic_ms() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec * 1000L + now.tv_nsec / 1'000'000L;
}

bool write_text(const char* path, const char* text) {
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  std::size_t size = std::strlen(text);
  bool ok = ::write(fd, text, size) == static_cast<ssize_t>(size);
  int error = errno;
  ::close(fd);
  errno = error;
  return ok;
}

void kill_cgroup(const CgroupPaths& cgroup) {
  bool have_kill = write_text(cgroup.kill, "1");
  int events = ::open(cgroup.events, O_RDONLY | O_CLOEXEC);
  const long deadline = monotonic_ms() + kKillWaitMs;
  while (events >= 0) {
    if (!have_kill) kill_listed(cgroup.procs);
    if (cgroup_empty(events)) break;
    long left = deadline - monotonic_ms();
    if (left <= 0) break;
    // cgroup.events signals POLLPRI when "populated" changes; re-check at least every 50 ms.
    pollfd change{events, POLLPRI, 0};
    ::poll(&change, 1, static_cast<int>(left < 50 ? left : 50));
  }
  if (events >= 0) ::close(events);
}

bool remove_cgroup(const CgroupPaths& cgroup) {
  const long deadline = monotonic_ms() + kKillWaitMs;
  while (true) {
    if (::rmdir(cgroup.dir) == 0 || errno == ENOENT) return true;
    if (errno != EBUSY || monotonic_ms() > deadline) return false;
    kill_cgroup(cgroup);
    timespec pause{0, 20'000'000};
    ::nanosleep(&pause, nullptr);
  }
}

bool cgroup_is_empty(const std::string& dir) {
  const int events = ::open((dir + "/cgroup.events").c_str(), O_RDONLY | O_CLOEXEC);
  if (events < 0) return false;  // cannot tell: not known to be empty
  const bool empty = cgroup_empty(events);
  ::close(events);
  return empty;
}

ContainmentProbe run_cgroup_location(std::string& dir) {
  ContainmentProbe probe{Containment::Cgroup, false, {}};
  std::optional<std::string> own = read_file("/proc/self/cgroup");
  std::optional<std::string> path = own ? cgroup2_path(*own) : std::nullopt;
  if (!path) {
    probe.detail = "no cgroup v2 entry (0::) in /proc/self/cgroup";
    return probe;
  }
  std::optional<std::string> mounts = read_file("/proc/self/mountinfo");
  std::optional<std::string> parent = mounts ? cgroup_directory(*mounts, *path) : std::nullopt;
  if (!parent) {
    probe.detail =
        fmt::format("cgroup {} is under no cgroup2 mount in /proc/self/mountinfo", *path);
    return probe;
  }
  dir = *parent + "/" + run_cgroup_name(::getpid(), random_bits());
  probe.works = true;
  probe.detail = *parent;
  return probe;
}

bool can_be_born_in(const char* dir) {
  const int fd = ::open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  int alive[2];
  if (::pipe2(alive, O_CLOEXEC) != 0) {
    ::close(fd);
    return false;
  }
  // The child says it lives with a byte: one killed at birth never runs a line of ours.
  // Its exit status would not do: with SIGCHLD ignored (inherited through exec) the kernel
  // reaps it, and waitpid has nothing to tell.
  const auto pid = static_cast<pid_t>(fork_into_cgroup(fd));
  if (pid == 0) {
    [[maybe_unused]] const ssize_t n = ::write(alive[1], "1", 1);
    ::_exit(0);
  }
  ::close(fd);
  ::close(alive[1]);
  char byte = 0;
  ssize_t n = -1;
  if (pid > 0) {
    while ((n = ::read(alive[0], &byte, 1)) < 0 && errno == EINTR) {
    }
    ::waitpid(pid, nullptr, 0);  // ECHILD when the kernel reaped it: fine
  }
  ::close(alive[0]);
  return n == 1;
}

std::optional<std::string> cannot_join(const std::string& dir) {
  const std::string procs = dir + "/cgroup.procs";
  int error = in_child([&procs] { return write_text(procs.c_str(), "0") ? 0 : errno; });
  if (error == 0) return std::nullopt;
  return fmt::format("cannot move a process into {}: {}", dir, errno_text(error));
}

ContainmentProbe make_run_cgroup(std::string& dir) {
  ContainmentProbe probe = run_cgroup_location(dir);
  if (!probe.works) return probe;
  std::optional<std::string> why;
  if (::mkdir(dir.c_str(), 0755) != 0) {
    why = fmt::format("cannot create {}: {}", dir, errno_text(errno));
  } else if ((why = cannot_join(dir))) {
    ::rmdir(dir.c_str());
  }
  if (why) {
    probe = {Containment::Cgroup, false, *why};
    dir.clear();
  }
  return probe;
}

}  // namespace xlaunch::launcher
