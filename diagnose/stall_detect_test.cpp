#include "diagnose/stall_detect.hpp"

#include <catch2/catch.hpp>

using namespace xlaunch::diagnose;
using namespace std::chrono_literals;

namespace {
std::vector<RankActivity> two(double cpu0, double cpu1, std::uint64_t lines = 0,
                              std::uint64_t requests = 0) {
  return {{0, true, cpu0, lines, requests}, {1, true, cpu1, 0, 0}};
}
}  // namespace

TEST_CASE("idle ranks stall once the window has passed, once per quiet spell", "[stall]") {
  StallDetector d(10s);
  const auto t0 = std::chrono::steady_clock::time_point{} + 1000s;
  CHECK_FALSE(d.update(t0, two(1.0, 1.0)));
  CHECK_FALSE(d.update(t0 + 5s, two(1.01, 1.0)));  // 0.2% of a core: noise
  CHECK_FALSE(d.update(t0 + 9s, two(1.02, 1.0)));
  CHECK(d.update(t0 + 10s, two(1.02, 1.0)));
  CHECK(d.cpu_in_window(0) == Approx(0.02));
  CHECK_FALSE(d.update(t0 + 30s, two(1.02, 1.0)));  // reported already
  // Progress re-arms; a new spell stalls again.
  CHECK_FALSE(d.update(t0 + 31s, two(1.02, 1.0, 1)));
  CHECK_FALSE(d.update(t0 + 40s, two(1.02, 1.0, 1)));
  CHECK(d.update(t0 + 41s, two(1.02, 1.0, 1)));
}

TEST_CASE("a busy but silent rank is progress, and so are output and store traffic", "[stall]") {
  const auto t0 = std::chrono::steady_clock::time_point{} + 1000s;
  StallDetector busy(10s);
  busy.update(t0, two(1.0, 1.0));
  for (int s = 1; s <= 60; ++s) {
    // Rank 1 computes at 90% of a core; rank 0 waits for it.
    CHECK_FALSE(busy.update(t0 + std::chrono::seconds(s), two(1.0, 1.0 + 0.9 * s)));
  }
  StallDetector store(10s);
  store.update(t0, two(1.0, 1.0));
  for (int s = 1; s <= 60; ++s) {
    CHECK_FALSE(store.update(t0 + std::chrono::seconds(s), two(1.0, 1.0, 0, s)));
  }
  StallDetector off(0s);
  off.update(t0, two(1.0, 1.0));
  CHECK_FALSE(off.update(t0 + 1000s, two(1.0, 1.0)));
}
