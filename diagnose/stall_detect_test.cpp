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

TEST_CASE("data moved through reads and writes is progress above housekeeping", "[stall]") {
  const auto t0 = std::chrono::steady_clock::time_point{} + 1000s;
  auto io = [](std::uint64_t bytes) {
    return std::vector<RankActivity>{{0, true, 1.0, 0, 0, bytes}, {1, true, 1.0, 0, 0, 0}};
  };
  StallDetector download(10s);
  download.update(t0, io(0));
  for (int s = 1; s <= 60; ++s) {  // 80 KB/s to disk, next to no CPU time
    CHECK_FALSE(download.update(t0 + std::chrono::seconds(s), io(80'000ULL * s)));
  }
  StallDetector housekeeping(10s);
  housekeeping.update(t0, io(0));
  for (int s = 1; s < 10; ++s) {  // reading /proc now and then: 2 KB/s
    CHECK_FALSE(housekeeping.update(t0 + std::chrono::seconds(s), io(2'000ULL * s)));
  }
  CHECK(housekeeping.update(t0 + 10s, io(20'000)));
  StallDetector gone(10s);  // a process that ended takes its count with it: no progress
  gone.update(t0, io(1'000'000));
  for (int s = 1; s < 10; ++s) CHECK_FALSE(gone.update(t0 + std::chrono::seconds(s), io(0)));
  CHECK(gone.update(t0 + 10s, io(0)));
}

TEST_CASE("the run's other processes count like a rank", "[stall]") {
  const auto t0 = std::chrono::steady_clock::time_point{} + 1000s;
  auto with_helper = [](double helper_cpu) {
    return std::vector<RankActivity>{{0, true, 1.0, 0, 0, 0},
                                     {kOtherProcesses, true, helper_cpu, 0, 0, 0}};
  };
  StallDetector d(10s);
  d.update(t0, with_helper(0));
  for (int s = 1; s <= 30; ++s) {  // a nohup'd helper computing at a full core
    CHECK_FALSE(d.update(t0 + std::chrono::seconds(s), with_helper(1.0 * s)));
  }
}
