// `xlaunch stacks`: the runtime folder's checks, finding the launchers that listen there
// (and removing what is stale), and one request over a launcher's socket.
#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "diagnose/safe_text.hpp"
#include "diagnose/stacks_registry.hpp"

namespace xlaunch::diagnose {
namespace {

FolderFacts folder_facts(const std::string& dir) {
  FolderFacts facts;
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return facts;
  facts.exists = true;
  facts.is_symlink = S_ISLNK(st.st_mode);
  facts.is_directory = S_ISDIR(st.st_mode);
  facts.owner = st.st_uid;
  facts.mode = st.st_mode & 07777;
  return facts;
}

bool ends_with(const std::string& text, std::string_view suffix) {
  return text.size() > suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') out.emplace_back(e->d_name);
  }
  ::closedir(d);
  return out;
}

// A launcher's socket, connected; -1 and `error` set when nobody answers there.
int connect_to(const std::string& path, int& error) {
  const std::optional<sockaddr_un> addr = unix_address(path);
  if (!addr) {
    error = ENAMETOOLONG;
    return -1;
  }
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    error = errno;
    return -1;
  }
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&*addr), sizeof *addr) != 0) {
    error = errno;
    ::close(fd);
    return -1;
  }
  return fd;
}

// Older versions wrote <run_id>.pid; such a file is never signalled, and is removed once its
// process is gone or is not an xlaunch (its pid reused).
void remove_stale_pid_file(const std::string& dir, const std::string& name) {
  std::ifstream in(dir + "/" + name);
  long pid = 0;
  bool ours = false;
  if ((in >> pid) && pid > 0) {
    char exe[4096];
    const ssize_t n = ::readlink(fmt::format("/proc/{}/exe", pid).c_str(), exe, sizeof exe - 1);
    if (n > 0) {
      std::string target(exe, static_cast<std::size_t>(n));
      if (ends_with(target, " (deleted)")) target.resize(target.size() - 10);
      ours = target.substr(target.rfind('/') + 1) == "xlaunch";
    }
  }
  if (ours) return;
  const std::string id = name.substr(0, name.size() - 4);
  ::unlink((dir + "/" + name).c_str());
  ::unlink((dir + "/" + id + ".stacks").c_str());
}

// Reads "<length>\n<text>" until the launcher closes; nullopt when it closed first.
std::optional<std::string> read_answer(int fd, std::chrono::milliseconds wait, bool& timed_out) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  std::string got;
  timed_out = false;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      return std::nullopt;
    }
    pollfd readable{fd, POLLIN, 0};
    const int ready = ::poll(&readable, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    char buffer[65536];
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;
    got.append(buffer, static_cast<std::size_t>(n));
  }
  const auto newline = got.find('\n');
  if (newline == std::string::npos) return std::nullopt;
  std::size_t length = 0;
  try {
    length = std::stoul(got.substr(0, newline));
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (got.size() - newline - 1 != length) return std::nullopt;
  return got.substr(newline + 1);
}

}  // namespace

std::optional<std::string> prepare_runtime_dir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return fmt::format("cannot create {}: {}", dir, std::strerror(errno));
  }
  return runtime_dir_problem(dir, folder_facts(dir), ::getuid());
}

std::vector<RunningLauncher> running_launchers(const std::string& dir) {
  std::vector<RunningLauncher> out;
  for (const std::string& name : entries(dir)) {
    const std::string path = dir + "/" + name;
    if (ends_with(name, ".pid")) remove_stale_pid_file(dir, name);
    if (!ends_with(name, ".sock")) continue;
    int error = 0;
    const int fd = connect_to(path, error);
    if (fd < 0) {
      // Nobody listens: the launcher ended without removing it (a SIGKILL before its
      // guardian could). Busy (EAGAIN): alive, but its queue is full.
      if (error == ECONNREFUSED) ::unlink(path.c_str());
      if (error != EAGAIN) continue;
    }
    RunningLauncher l{name.substr(0, name.size() - 5), 0, path};
    ucred peer{};
    socklen_t size = sizeof peer;
    if (fd >= 0 && ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &size) == 0) l.pid = peer.pid;
    if (fd >= 0) ::close(fd);
    out.push_back(std::move(l));
  }
  return out;
}

int ask_for_stacks(const std::string& dir, const std::optional<std::string>& run_id,
                   std::chrono::milliseconds wait) {
  if (auto problem = runtime_dir_problem(dir, folder_facts(dir), ::getuid())) {
    fmt::print(stderr, "xlaunch stacks: error: {}\n", *problem);
    return 2;
  }
  const std::vector<RunningLauncher> all = running_launchers(dir);
  std::vector<RunningLauncher> match;
  for (const RunningLauncher& l : all) {
    if (!run_id || l.socket == socket_path(dir, *run_id)) match.push_back(l);
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
  int error = 0;
  const int fd = connect_to(l.socket, error);
  if (fd < 0) {
    fmt::print(stderr, "xlaunch stacks: cannot reach the launcher of {} at {}: {}\n", l.run_id,
               l.socket, std::strerror(error));
    return 1;
  }
  constexpr std::string_view kRequest = "stacks\n";
  const bool sent = ::send(fd, kRequest.data(), kRequest.size(), MSG_NOSIGNAL) ==
                    static_cast<ssize_t>(kRequest.size());
  bool timed_out = false;
  const std::optional<std::string> text =
      sent ? read_answer(fd, wait, timed_out) : std::optional<std::string>();
  ::close(fd);
  if (text) {
    fmt::print("{}", escape_controls(*text));
    return 0;
  }
  if (timed_out) {
    fmt::print(stderr, "xlaunch stacks: the launcher of {} (pid {}) did not answer within {}s\n",
               l.run_id, l.pid, wait.count() / 1000);
  } else {
    fmt::print(stderr,
               "xlaunch stacks: the launcher of {} (pid {}) ended before its stacks were "
               "collected: the job finished or stopped during the dump\n",
               l.run_id, l.pid);
  }
  return 1;
}

}  // namespace xlaunch::diagnose
