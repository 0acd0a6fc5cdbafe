// The stall report (pure): what each rank was doing when the job stopped making progress,
// as console lines and as summary.json's "stall" object.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "diagnose/stacks_group.hpp"

namespace xlaunch::diagnose {

using Clock = std::chrono::system_clock;

struct RankStallState {
  int rank = 0;
  long pid = 0;
  bool alive = false;
  bool stopped = false;  // alive, and stopped: SIGSTOP, Ctrl-Z or a debugger
  std::string ended;     // when not alive: "exited with code 0"
  std::optional<Clock::time_point> ended_at;
  double cpu_seconds = 0;                // CPU time of its process tree over the window
  std::optional<std::string> last_line;  // its last line of output, stdout or stderr
  std::optional<Clock::time_point> last_output;
  std::vector<std::string> waiting_keys;  // store keys its parked WAIT misses
  std::vector<std::string> dialing;       // endpoints it is connecting to, not connected
};

struct StallReport {
  double window_seconds = 0;  // how long nothing moved
  Clock::time_point at;
  std::vector<RankStallState> ranks;
  std::vector<StackGroup> stacks;
};

/// "22:03:04" (UTC).
std::string clock_time(Clock::time_point t);

/// How a rank that is not alive is described in the stacks groups:
/// "exited with code 0 at 22:03:04".
std::string ended_text(const RankStallState& r);

/// The ranks that differ from the largest group of identical stacks, when there is one
/// largest group: "rank 1 (exited with code 0 at 22:03:04)". nullopt otherwise.
std::optional<std::string> odd_one_out(const StallReport& report);

/// Console and xlaunch.log text; every line starts "xlaunch: ".
std::string format_stall_report(const StallReport& report);

/// summary.json's "stall" object.
std::string stall_json(const StallReport& report);

}  // namespace xlaunch::diagnose
