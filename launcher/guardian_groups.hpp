// The guardian's list of process groups to kill if the launcher vanishes (process-group
// containment), each with its leader's start time, so that a number that went to another
// process is let be. Pure: the caller reads start times (proc_start_ticks.hpp) and owns the
// arrays; no allocation (the guardian keeps to system calls).
#pragma once

#include <cstddef>
#include <cstdint>

namespace xlaunch::launcher {

/// A leader that had already ended when its registration was read.
inline constexpr unsigned long long kLeaderGone = ~0ULL;

struct GuardedGroups {
  std::int32_t* groups;
  unsigned long long* leader_starts;  // each group's leader's start time, or kLeaderGone
  std::size_t capacity;
  std::size_t count = 0;

  /// A registration of `pgid` (the worker's own, before exec, and the launcher's again),
  /// `start_now` the start time of the process with that pid as it is read (0: none). A
  /// start read applies to every copy of the number, an older one of a group that emptied
  /// unseen included: whoever has the number now is the one to kill.
  void remember(std::int32_t pgid, unsigned long long start_now);
  /// Every copy of `pgid`.
  void forget(std::int32_t pgid);
  /// Whether group `i`'s number now belongs to another process, `start_now` being the start
  /// time of the process with that pid (0: none). A leader gone at registration has no
  /// successor of its pid while its group lives: any process with it is a newcomer.
  bool reused(std::size_t i, unsigned long long start_now) const;
};

}  // namespace xlaunch::launcher
