#include "diagnose/stacks_target.hpp"

#include <charconv>
#include <cstdint>

#include "config/text.hpp"

namespace xlaunch::diagnose {

bool catches_signal(std::string_view proc_status, int signal) {
  if (signal < 1 || signal > 64) return false;
  constexpr std::string_view kKey = "\nSigCgt:";
  const auto at = proc_status.find(kKey);
  if (at == std::string_view::npos) return false;
  std::string_view rest = proc_status.substr(at + kKey.size());
  rest = rest.substr(0, rest.find('\n'));
  rest = config::trim(rest);
  std::uint64_t mask = 0;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), mask, 16);
  if (ec != std::errc() || end != rest.data() + rest.size() || rest.empty()) return false;
  return (mask >> (signal - 1)) & 1U;
}

std::optional<int> parse_descriptor_note(std::string_view text) {
  int fd = -1;
  if (!config::parse_int(text, fd) || fd < 0) return std::nullopt;
  return fd;
}

std::optional<long> own_pid(std::string_view proc_status) {
  constexpr std::string_view kKey = "\nNSpid:";
  const auto at = proc_status.find(kKey);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view line = proc_status.substr(at + kKey.size());
  line = config::trim(line.substr(0, line.find('\n')));
  const auto last = line.find_last_of(" \t");
  const std::string_view tail = last == std::string_view::npos ? line : line.substr(last + 1);
  long pid = 0;
  const auto [end, ec] = std::from_chars(tail.data(), tail.data() + tail.size(), pid);
  if (ec != std::errc() || end != tail.data() + tail.size() || pid <= 0) return std::nullopt;
  return pid;
}

std::string missing_text(DumpTarget why) {
  switch (why) {
    case DumpTarget::ready:
      return {};
    case DumpTarget::not_python:
      return "stacks not available: not a Python worker";
    case DumpTarget::no_handler:
      return "stacks not available: it no longer answers the dump signal (it replaced its "
             "program with exec, or unregistered faulthandler)";
    case DumpTarget::file_closed:
      return "stacks not available: its dump file is no longer open (it closed its "
             "descriptors)";
    case DumpTarget::ended:
      return "stacks not available: it ended";
  }
  return {};
}

}  // namespace xlaunch::diagnose
