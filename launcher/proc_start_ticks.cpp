#include "launcher/proc_start_ticks.hpp"

#include <algorithm>

namespace xlaunch::launcher {

std::optional<unsigned long long> parse_start_ticks(std::string_view stat) {
  // "pid (comm) state ppid ..."; comm may contain ") ", so the last ')' ends it.
  const auto close = stat.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  std::string_view rest = stat.substr(close + 1);
  constexpr int kStartField = 22;
  int field = 2;  // the command name's
  while (true) {
    const auto begin = rest.find_first_not_of(" \n");
    if (begin == std::string_view::npos) return std::nullopt;
    rest.remove_prefix(begin);
    const auto end = std::min(rest.find_first_of(" \n"), rest.size());
    if (++field == kStartField) {
      unsigned long long ticks = 0;
      if (end == 0) return std::nullopt;
      for (char c : rest.substr(0, end)) {
        if (c < '0' || c > '9' || ticks > (~0ULL - 9) / 10) return std::nullopt;
        ticks = ticks * 10 + static_cast<unsigned>(c - '0');
      }
      return ticks;
    }
    rest.remove_prefix(end);
  }
}

}  // namespace xlaunch::launcher
