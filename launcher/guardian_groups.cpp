#include "launcher/guardian_groups.hpp"

namespace xlaunch::launcher {

void GuardedGroups::remember(std::int32_t pgid, unsigned long long start_now) {
  if (count == capacity) return;
  for (std::size_t i = 0; i < count; ++i)
    if (groups[i] == pgid && start_now != 0) leader_starts[i] = start_now;
  groups[count] = pgid;
  leader_starts[count++] = start_now != 0 ? start_now : kLeaderGone;
}

void GuardedGroups::forget(std::int32_t pgid) {
  for (std::size_t i = 0; i < count;) {
    if (groups[i] == pgid) {
      --count;
      groups[i] = groups[count];
      leader_starts[i] = leader_starts[count];
    } else {
      ++i;
    }
  }
}

bool GuardedGroups::reused(std::size_t i, unsigned long long start_now) const {
  if (start_now == 0) return false;
  return leader_starts[i] == kLeaderGone || start_now != leader_starts[i];
}

}  // namespace xlaunch::launcher
