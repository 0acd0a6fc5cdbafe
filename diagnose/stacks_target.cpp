#include "diagnose/stacks_target.hpp"

#include <sys/syscall.h>

#include <algorithm>
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

bool stopped_state(std::string_view proc_status) {
  constexpr std::string_view kKey = "\nState:";
  const auto at = proc_status.find(kKey);
  if (at == std::string_view::npos) return false;
  const std::string_view state = config::trim(proc_status.substr(at + kKey.size(), 4));
  return state.starts_with('T') || state.starts_with('t');
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

std::optional<BlockedCall> blocked_in_syscall(std::string_view text) {
  text = config::trim(text);
  const auto field = [&text]() {
    const std::string_view word = text.substr(0, text.find(' '));
    text.remove_prefix(std::min(text.size(), word.size() + 1));
    return word;
  };
  const std::string_view first = field();
  BlockedCall call;
  const auto [end, ec] = std::from_chars(first.data(), first.data() + first.size(), call.number);
  if (ec != std::errc() || end != first.data() + first.size() || call.number < 0) {
    return std::nullopt;
  }
  for (unsigned long long* arg : {&call.arg0, &call.arg1, &call.arg2, &call.arg3}) {
    std::string_view hex = field();
    if (!hex.starts_with("0x")) return std::nullopt;
    hex.remove_prefix(2);
    const auto [arg_end, arg_ec] = std::from_chars(hex.data(), hex.data() + hex.size(), *arg, 16);
    if (arg_ec != std::errc() || arg_end != hex.data() + hex.size()) return std::nullopt;
  }
  return call;
}

bool cut_short_by_a_signal(const BlockedCall& call) {
  constexpr unsigned long long kTimerAbstime = 1;  // <time.h>'s TIMER_ABSTIME
  switch (call.number) {
    // This machine's numbers: /proc shows the worker's, which runs on the same architecture
    // (x86-64's futex, 202, is accept on arm64).
    case SYS_futex:  // futex(uaddr, op, value, timeout, ...)
      return call.arg3 != 0;
    case SYS_wait4:
    case SYS_waitid:
      return false;
    case SYS_clock_nanosleep:  // clock_nanosleep(clock, flags, ...)
      return (call.arg1 & kTimerAbstime) == 0;
    default:
      return true;
  }
}

std::string missing_text(DumpTarget why) {
  switch (why) {
    case DumpTarget::ready:
      return {};
    case DumpTarget::not_python:
      return "stacks not available: not a Python worker";
    case DumpTarget::no_handler:
      return "stacks not available: it no longer answers the dump signal (it replaced its "
             "program with exec, unregistered faulthandler, or handles the signal itself)";
    case DumpTarget::file_closed:
      return "stacks not available: its dump file is no longer open (it closed its "
             "descriptors)";
    case DumpTarget::ended:
      return "stacks not available: it ended";
    case DumpTarget::threads_unseen:
      return "stacks not taken: xlaunch may not look inside it (no ptrace access: a process "
             "that made itself non-dumpable, or Yama's ptrace_scope), and the dump signal could "
             "cut one of its system calls short";
    case DumpTarget::stopped:
      return "stacks not taken: it is stopped (SIGSTOP, Ctrl-Z or a debugger; SIGCONT resumes "
             "it): a dump signal would wait until it runs again";
    case DumpTarget::would_cut_short:
      return "stacks not taken: each of its threads runs, or waits in a system call that "
             "the dump signal could cut short (poll, a socket read or write, a sleep, ...), "
             "which its code may not expect";
  }
  return {};
}

}  // namespace xlaunch::diagnose
