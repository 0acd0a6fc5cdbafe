#include <dirent.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <string>
#include <unordered_map>

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

std::vector<TreeSample> sample_trees(const std::vector<long>& roots) {
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
  std::vector<TreeSample> out;
  for (long root : roots) {
    TreeSample& sample = out.emplace_back();
    auto root_stat = stats.find(root);
    if (root_stat == stats.end() || root_stat->second.state == 'Z') continue;
    sample.alive = true;
    std::vector<long> todo{root};
    while (!todo.empty()) {
      const long pid = todo.back();
      todo.pop_back();
      const ProcStat& s = stats[pid];
      if (s.state == 'Z') continue;
      sample.pids.push_back(pid);
      sample.cpu_seconds += static_cast<double>(s.cpu_ticks) / kTicks;
      add_sockets(pid, sample.socket_inodes);
      for (long child : children[pid]) todo.push_back(child);
    }
  }
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
