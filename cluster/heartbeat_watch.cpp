#include "cluster/heartbeat_watch.hpp"

namespace xlaunch::cluster {

bool HeartbeatWatch::stalled(const std::string& key, std::string_view value,
                             Clock::time_point now) {
  auto [at, fresh] = seen_.try_emplace(key, std::string(value), now);
  auto& [last, since] = at->second;
  if (fresh || value != last) {
    last = std::string(value);
    since = now;
    return false;
  }
  return now - since > timeout_;
}

void HeartbeatWatch::restart(Clock::time_point now) {
  for (auto& [key, entry] : seen_) entry.second = now;
}

}  // namespace xlaunch::cluster
