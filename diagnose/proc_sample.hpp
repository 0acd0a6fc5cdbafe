// What the diagnosis reads of a worker's process tree from /proc (proc_net_posix.cpp):
// CPU time, I/O, liveness, and the TCP sockets it holds; and the same for the run's other
// processes, those that left every rank's tree. Linux only.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "diagnose/proc_net.hpp"

namespace xlaunch::diagnose {

struct TreeSample {
  bool alive = false;                     // the root exists and is not a zombie
  bool stopped = false;                   // the root is stopped: SIGSTOP, Ctrl-Z, a debugger
  double cpu_seconds = 0;                 // utime + stime of every live process of the tree
  std::uint64_t io_bytes = 0;             // rchar + wchar of every live process of the tree
  std::vector<long> pids;                 // root first
  std::set<unsigned long> socket_inodes;  // sockets any of them holds
};

/// Where the run's processes are, beyond the ranks' trees.
struct RunScope {
  std::string cgroup_procs;  // the run's cgroup.procs ("" without a cgroup)
  long launcher = 0;         // every descendant of the launcher (it adopts orphans)...
  long guardian = -1;        // ...but its guardian (whose own orphans it adopted count)
};

struct RunSample {
  std::vector<TreeSample> ranks;  // per root, in order
  TreeSample others;              // the run's processes in no rank's tree (a `nohup cmd &` helper)
};

/// Each root process and its descendants now, and the run's other processes (one pass over
/// /proc for all of them).
RunSample sample_run(const std::vector<long>& roots, const RunScope& scope);

/// The socket tables of `pid`'s network namespace: TCP and UDP rows, and every inode any
/// table lists (TCP, UDP, unix), so that a socket listed nowhere (a connect that failed and
/// is about to be retried) can be told apart.
struct SocketTables {
  std::vector<SocketEntry> inet;
  std::set<unsigned long> listed;
};
SocketTables read_socket_tables(long pid);

}  // namespace xlaunch::diagnose
