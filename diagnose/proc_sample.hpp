// What the diagnosis reads of a worker's process tree from /proc (proc_net_posix.cpp):
// CPU time, liveness, and the TCP sockets it holds. Linux only.
#pragma once

#include <set>
#include <vector>

#include "diagnose/proc_net.hpp"

namespace xlaunch::diagnose {

struct TreeSample {
  bool alive = false;                     // the root exists and is not a zombie
  double cpu_seconds = 0;                 // utime + stime of every live process of the tree
  std::vector<long> pids;                 // root first
  std::set<unsigned long> socket_inodes;  // sockets any of them holds
};

/// Each root process and its descendants now (one pass over /proc for all of them).
std::vector<TreeSample> sample_trees(const std::vector<long>& roots);

/// The socket tables of `pid`'s network namespace: TCP and UDP rows, and every inode any
/// table lists (TCP, UDP, unix), so that a socket listed nowhere (a connect that failed and
/// is about to be retried) can be told apart.
struct SocketTables {
  std::vector<SocketEntry> inet;
  std::set<unsigned long> listed;
};
SocketTables read_socket_tables(long pid);

}  // namespace xlaunch::diagnose
