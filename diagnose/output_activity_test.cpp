#include "diagnose/output_activity.hpp"

#include <catch2/catch.hpp>

using namespace xlaunch::diagnose;

TEST_CASE("output activity counts lines per attempt, rank and second") {
  OutputActivity activity;
  CHECK(activity.csv() == "attempt,rank,unix_second,lines\n");
  const std::chrono::system_clock::time_point t{std::chrono::seconds(1000)};
  activity.note(0, 1, t);
  activity.note(0, 1, t + std::chrono::milliseconds(999));
  activity.note(0, 1, t + std::chrono::seconds(1));
  activity.note(0, 0, t);
  activity.note(1, 0, t + std::chrono::seconds(5));
  CHECK(activity.csv() ==
        "attempt,rank,unix_second,lines\n"
        "0,0,1000,1\n"
        "0,1,1000,2\n"
        "0,1,1001,1\n"
        "1,0,1005,1\n");
}
