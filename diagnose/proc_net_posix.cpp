#include <dirent.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "diagnose/proc_sample.hpp"

namespace xlaunch::diagnose {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {};
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<long> numeric_entries(const std::string& dir) {
  std::vector<long> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    long n = 0;
    const std::string_view name(e->d_name);
    auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), n);
    if (ec == std::errc() && p == name.data() + name.size()) out.push_back(n);
  }
  ::closedir(d);
  return out;
}

void add_sockets(long pid, std::set<unsigned long>& into) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd/";
  char link[128];
  for (long fd : numeric_entries(dir)) {
    const ssize_t n = ::readlink((dir + std::to_string(fd)).c_str(), link, sizeof link);
    if (n <= 0) continue;
    if (auto inode = socket_inode(std::string_view(link, static_cast<std::size_t>(n)))) {
      into.insert(*inode);
    }
  }
}

}  // namespace

RunSample sample_run(const std::vector<long>& roots, const RunScope& scope) {
  static const double kTicks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  // One pass over /proc: every process's parent, to walk down from each root.
  std::unordered_map<long, std::vector<long>> children;
  std::unordered_map<long, ProcStat> stats;
  for (long pid : numeric_entries("/proc")) {
    auto stat = parse_proc_stat(slurp("/proc/" + std::to_string(pid) + "/stat"));
    if (!stat) continue;
    children[stat->ppid].push_back(pid);
    stats[pid] = *stat;
  }
  std::unordered_set<long> counted;  // a process counts once, for the first tree it is in
  // `pid` and its live descendants into `sample`.
  auto walk = [&](long pid, TreeSample& sample, bool sockets) {
    std::vector<long> todo{pid};
    while (!todo.empty()) {
      const long next = todo.back();
      todo.pop_back();
      auto stat = stats.find(next);
      if (stat == stats.end() || stat->second.state == 'Z' || !counted.insert(next).second) {
        continue;
      }
      sample.pids.push_back(next);
      sample.cpu_seconds += static_cast<double>(stat->second.cpu_ticks) / kTicks;
      const auto io = parse_io_bytes(slurp("/proc/" + std::to_string(next) + "/io"));
      sample.io_bytes += io.value_or(0);
      if (sockets) add_sockets(next, sample.socket_inodes);
      for (long child : children[next]) todo.push_back(child);
    }
  };
  RunSample out;
  for (long root : roots) {
    TreeSample& sample = out.ranks.emplace_back();
    auto root_stat = stats.find(root);
    if (root_stat == stats.end() || root_stat->second.state == 'Z') continue;
    sample.alive = true;
    sample.stopped = root_stat->second.state == 'T' || root_stat->second.state == 't';
    walk(root, sample, true);
  }
  // The rest of the run: orphans the launcher (a subreaper) or, in a PID namespace, the
  // guardian adopted, and whatever else the run's cgroup holds.
  counted.insert(scope.launcher);
  counted.insert(scope.guardian);
  std::vector<long> rest = children[scope.launcher];
  if (scope.guardian > 0)
    rest.insert(rest.end(), children[scope.guardian].begin(), children[scope.guardian].end());
  if (!scope.cgroup_procs.empty()) {
    std::istringstream procs(slurp(scope.cgroup_procs));
    for (long pid = 0; procs >> pid;) rest.push_back(pid);
  }
  out.others.alive = true;
  for (long pid : rest) walk(pid, out.others, false);
  return out;
}

SocketTables read_socket_tables(long pid) {
  SocketTables t;
  const std::string net = "/proc/" + std::to_string(pid) + "/net/";
  for (const char* name : {"tcp", "tcp6", "udp", "udp6"}) {
    for (SocketEntry& e : parse_socket_table(slurp(net + name))) {
      t.listed.insert(e.inode);
      if (name[0] == 't') t.inet.push_back(std::move(e));
    }
  }
  for (unsigned long inode : parse_unix_inodes(slurp(net + "unix"))) t.listed.insert(inode);
  return t;
}

}  // namespace xlaunch::diagnose
