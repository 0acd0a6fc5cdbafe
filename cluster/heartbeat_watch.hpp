// The store backend's host reads every other launcher's heartbeat (hb/<m>, a value its
// launcher rewrites each beat): a launcher is lost when its value stands still for longer
// than --heartbeat_timeout. Pure: the caller passes the clock.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <string_view>
#include <utility>

namespace xlaunch::cluster {

class HeartbeatWatch {
 public:
  using Clock = std::chrono::steady_clock;
  explicit HeartbeatWatch(std::chrono::milliseconds timeout) : timeout_(timeout) {}

  /// Records that heartbeat `key` read `value` at `now` (any text: only a change counts).
  /// True when it has not changed for longer than the timeout (since it was first read, last
  /// changed or the watch restarted).
  bool stalled(const std::string& key, std::string_view value, Clock::time_point now);
  /// Every heartbeat's clock starts again at `now`: the watcher itself was not running (its
  /// launcher was stopped or starved), so a value that stood still meanwhile proves nothing.
  void restart(Clock::time_point now);

 private:
  std::chrono::milliseconds timeout_;
  std::map<std::string, std::pair<std::string, Clock::time_point>> seen_;  // value, since
};

}  // namespace xlaunch::cluster
