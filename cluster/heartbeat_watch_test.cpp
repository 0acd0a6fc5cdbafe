#include "cluster/heartbeat_watch.hpp"

#include <catch2/catch.hpp>

using namespace xlaunch::cluster;
using namespace std::chrono_literals;

TEST_CASE("a heartbeat counter that stands still past the timeout is stalled", "[heartbeat]") {
  const HeartbeatWatch::Clock::time_point t0{};
  HeartbeatWatch watch(2s);
  CHECK_FALSE(watch.stalled("hb/1", "0", t0));  // first read: the clock starts now
  CHECK_FALSE(watch.stalled("hb/1", "0", t0 + 2s));
  CHECK(watch.stalled("hb/1", "0", t0 + 2001ms));
  CHECK_FALSE(watch.stalled("hb/1", "1", t0 + 3s));  // it moved: the clock starts again
  CHECK_FALSE(watch.stalled("hb/1", "1", t0 + 5s));
  CHECK(watch.stalled("hb/1", "1", t0 + 6s));
}

TEST_CASE("each counter has its own clock", "[heartbeat]") {
  const HeartbeatWatch::Clock::time_point t0{};
  HeartbeatWatch watch(1s);
  CHECK_FALSE(watch.stalled("hb/1", "4", t0));
  CHECK_FALSE(watch.stalled("hb/2", "9", t0 + 3s));
  CHECK(watch.stalled("hb/1", "4", t0 + 3s));
  CHECK_FALSE(watch.stalled("hb/2", "9", t0 + 3500ms));
}

TEST_CASE("any change of the value is a beat, and a restart forgets the time not watched",
          "[heartbeat]") {
  const HeartbeatWatch::Clock::time_point t0{};
  HeartbeatWatch watch(2s);
  CHECK_FALSE(watch.stalled("hb/1", "7", t0));
  CHECK_FALSE(watch.stalled("hb/1", "not a number", t0 + 1s));  // changed: alive
  // The watcher was stopped for a minute: nothing is stalled until 2 s after it resumed.
  watch.restart(t0 + 61s);
  CHECK_FALSE(watch.stalled("hb/1", "not a number", t0 + 61s));
  CHECK_FALSE(watch.stalled("hb/1", "not a number", t0 + 63s));
  CHECK(watch.stalled("hb/1", "not a number", t0 + 63001ms));
}
