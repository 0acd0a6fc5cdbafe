#include "diagnose/proc_net.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cstring>

namespace xlaunch::diagnose {
namespace {

std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    std::size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

// Calls `row` with the fields of each line after the first, which names the columns.
template <class Row>
void for_each_row(std::string_view text, Row&& row) {
  std::size_t start = text.find('\n');
  while (start != std::string_view::npos && start + 1 < text.size()) {
    ++start;
    std::size_t end = text.find('\n', start);
    row(fields(text.substr(start, (end == std::string_view::npos ? text.size() : end) - start)));
    start = end;
  }
}

template <class T>
bool parse_num(std::string_view text, T& out, int base = 10) {
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), out, base);
  return ec == std::errc() && p == text.data() + text.size();
}

// "0100007F:1F90" (IPv4) or 32 hex digits (IPv6): 32-bit words printed in the kernel's
// native byte order, so the word's bytes in memory are the address's network-order bytes.
bool parse_address(std::string_view text, std::string& addr, std::uint16_t& port) {
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) return false;
  const std::string_view hex = text.substr(0, colon);
  if (!parse_num(text.substr(colon + 1), port, 16)) return false;
  if (hex.size() != 8 && hex.size() != 32) return false;
  unsigned char bytes[16];
  for (std::size_t w = 0; w < hex.size() / 8; ++w) {
    std::uint32_t word = 0;
    if (!parse_num(hex.substr(w * 8, 8), word, 16)) return false;
    std::memcpy(bytes + 4 * w, &word, 4);
  }
  if (hex.size() == 8) {
    addr = fmt::format("{}.{}.{}.{}", bytes[0], bytes[1], bytes[2], bytes[3]);
    return true;
  }
  static const unsigned char kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(bytes, kMapped, 12) == 0) {
    addr = fmt::format("{}.{}.{}.{}", bytes[12], bytes[13], bytes[14], bytes[15]);
    return true;
  }
  // Full form without zero compression, except the two common cases.
  static const unsigned char kAny[16] = {};
  unsigned char loop[16] = {};
  loop[15] = 1;
  if (std::memcmp(bytes, kAny, 16) == 0) {
    addr = "::";
  } else if (std::memcmp(bytes, loop, 16) == 0) {
    addr = "::1";
  } else {
    addr.clear();
    for (int i = 0; i < 16; i += 2) {
      if (i) addr += ':';
      addr += fmt::format("{:x}", (bytes[i] << 8) | bytes[i + 1]);
    }
  }
  return true;
}

}  // namespace

std::vector<SocketEntry> parse_socket_table(std::string_view text) {
  std::vector<SocketEntry> out;
  for_each_row(text, [&](const std::vector<std::string_view>& f) {
    // sl local rem st tx:rx tr:when retrnsmt uid timeout inode ...
    SocketEntry e;
    if (f.size() < 10 || !parse_address(f[1], e.local_addr, e.local_port) ||
        !parse_address(f[2], e.remote_addr, e.remote_port) || !parse_num(f[3], e.state, 16) ||
        !parse_num(f[9], e.inode)) {
      return;
    }
    out.push_back(std::move(e));
  });
  return out;
}

std::vector<unsigned long> parse_unix_inodes(std::string_view text) {
  std::vector<unsigned long> out;
  for_each_row(text, [&](const std::vector<std::string_view>& f) {
    // Num RefCount Protocol Flags Type St Inode [Path]
    unsigned long inode = 0;
    if (f.size() >= 7 && parse_num(f[6], inode)) out.push_back(inode);
  });
  return out;
}

std::optional<unsigned long> socket_inode(std::string_view link) {
  constexpr std::string_view kPrefix = "socket:[";
  if (link.size() < kPrefix.size() + 2 || link.substr(0, kPrefix.size()) != kPrefix ||
      link.back() != ']') {
    return std::nullopt;
  }
  unsigned long inode = 0;
  if (!parse_num(link.substr(kPrefix.size(), link.size() - kPrefix.size() - 1), inode)) {
    return std::nullopt;
  }
  return inode;
}

std::string endpoint(const std::string& addr, std::uint16_t port) {
  if (addr.find(':') != std::string::npos) return fmt::format("[{}]:{}", addr, port);
  return fmt::format("{}:{}", addr, port);
}

std::optional<ProcStat> parse_proc_stat(std::string_view text) {
  // "pid (comm) state ppid ..."; comm may contain ") ", so the last ')' ends it.
  const auto open = text.find('(');
  const auto close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return std::nullopt;
  }
  ProcStat s;
  if (!parse_num(fields(text.substr(0, open)).empty() ? std::string_view{}
                                                      : fields(text.substr(0, open))[0],
                 s.pid)) {
    return std::nullopt;
  }
  const auto f = fields(text.substr(close + 1));
  // state(3) ppid(4) pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime(14)
  // stime(15): f[0] is field 3.
  if (f.size() < 13 || f[0].size() != 1) return std::nullopt;
  s.state = f[0][0];
  unsigned long long utime = 0;
  unsigned long long stime = 0;
  if (!parse_num(f[1], s.ppid) || !parse_num(f[11], utime) || !parse_num(f[12], stime)) {
    return std::nullopt;
  }
  s.cpu_ticks = utime + stime;
  return s;
}

std::optional<std::uint64_t> parse_io_bytes(std::string_view proc_io) {
  std::optional<std::uint64_t> read;
  std::optional<std::uint64_t> written;
  while (!proc_io.empty()) {
    const auto end = proc_io.find('\n');
    const std::string_view line = proc_io.substr(0, end);
    proc_io.remove_prefix(end == std::string_view::npos ? proc_io.size() : end + 1);
    const auto f = fields(line);
    std::uint64_t value = 0;
    if (f.size() != 2 || !parse_num(f[1], value)) continue;
    if (f[0] == "rchar:") read = value;
    if (f[0] == "wchar:") written = value;
  }
  if (!read || !written) return std::nullopt;
  return *read + *written;
}

}  // namespace xlaunch::diagnose
