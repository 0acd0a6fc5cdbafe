// The store backend's host reads every other launcher's heartbeat counter (hb/<m>, one add
// per beat): a launcher is lost when its count stands still for longer than
// --heartbeat_timeout. Pure: the caller passes the clock.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>

namespace xlaunch::cluster {

class HeartbeatWatch {
 public:
  using Clock = std::chrono::steady_clock;
  explicit HeartbeatWatch(std::chrono::milliseconds timeout) : timeout_(timeout) {}

  /// Records that counter `key` read `beats` at `now`. True when the count has not moved for
  /// longer than the timeout (since it was first read or last moved).
  bool stalled(const std::string& key, std::int64_t beats, Clock::time_point now);

 private:
  std::chrono::milliseconds timeout_;
  std::map<std::string, std::pair<std::int64_t, Clock::time_point>> seen_;  // count, since
};

}  // namespace xlaunch::cluster
