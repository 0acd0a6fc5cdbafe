// When a process started, from its /proc/PID/stat: with the pid, it names one process for
// good, where a pid alone names whichever process has it now. Pure; no allocation (the
// guardian calls it).
#pragma once

#include <optional>
#include <string_view>

namespace xlaunch::launcher {

/// Field 22 of /proc/PID/stat (starttime, clock ticks after boot); nullopt when `stat` is
/// not such a line. The command name may hold blanks and parentheses.
std::optional<unsigned long long> parse_start_ticks(std::string_view stat);

}  // namespace xlaunch::launcher
