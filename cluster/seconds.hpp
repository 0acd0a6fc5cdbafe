// Durations in messages, as the flags give them: "--heartbeat_timeout 2.5s" ({:g}).
#pragma once

#include <chrono>

namespace xlaunch::cluster {

inline double seconds(std::chrono::milliseconds d) {
  return static_cast<double>(d.count()) / 1000.0;
}

}  // namespace xlaunch::cluster
