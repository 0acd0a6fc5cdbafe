#include "cluster/heartbeat_watch.hpp"

namespace xlaunch::cluster {

bool HeartbeatWatch::stalled(const std::string& key, std::int64_t beats, Clock::time_point now) {
  auto [at, fresh] = seen_.try_emplace(key, -1, now);
  auto& [value, since] = at->second;
  if (beats != value) {
    value = beats;
    since = now;
    return false;
  }
  return now - since > timeout_;
}

}  // namespace xlaunch::cluster
