// Pure parsers of the /proc files the diagnosis reads: a process's stat line and I/O, the socket
// tables (/proc/net/tcp, tcp6, udp, udp6, unix) and fd links ("socket:[123]"). The reading
// itself is in proc_net_posix.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xlaunch::diagnose {

/// One row of /proc/net/tcp, tcp6, udp or udp6.
struct SocketEntry {
  std::string local_addr;  // numeric: "127.0.0.1", "::1"; IPv4-mapped IPv6 shown as IPv4
  std::uint16_t local_port = 0;
  std::string remote_addr;
  std::uint16_t remote_port = 0;
  int state = 0;  // the kernel's TCP state number: 1 ESTABLISHED, 2 SYN_SENT, 10 LISTEN...
  unsigned long inode = 0;
};

inline constexpr int kTcpEstablished = 1;
inline constexpr int kTcpSynSent = 2;

/// Rows of a /proc/net/{tcp,tcp6,udp,udp6} table; malformed rows are skipped.
std::vector<SocketEntry> parse_socket_table(std::string_view text);
/// Inodes of the rows of /proc/net/unix.
std::vector<unsigned long> parse_unix_inodes(std::string_view text);
/// "socket:[123]" -> 123.
std::optional<unsigned long> socket_inode(std::string_view fd_link);
/// "127.0.0.1:29500", "[::1]:29500".
std::string endpoint(const std::string& addr, std::uint16_t port);

/// The fields of /proc/PID/stat the diagnosis uses.
struct ProcStat {
  long pid = 0;
  char state = '?';  // R, S, D, Z...
  long ppid = 0;
  unsigned long long cpu_ticks = 0;  // utime + stime, in clock ticks
};
/// Parses /proc/PID/stat (the command name may hold blanks and parentheses).
std::optional<ProcStat> parse_proc_stat(std::string_view text);

/// The bytes a process moved through read and write calls (files, pipes, terminals, sockets
/// read with read(2)): rchar + wchar of /proc/PID/io; nullopt when either is missing.
std::optional<std::uint64_t> parse_io_bytes(std::string_view proc_io);

}  // namespace xlaunch::diagnose
