#include "diagnose/output_activity.hpp"

#include <catch2/catch.hpp>
#include <sstream>
#include <string>

using namespace xlaunch::diagnose;

TEST_CASE("output activity counts lines per attempt, rank and second") {
  OutputActivity activity;
  CHECK(activity.csv() == "attempt,rank,unix_second,lines,seconds\n");
  const std::chrono::system_clock::time_point t{std::chrono::seconds(1000)};
  activity.note(0, 1, t);
  activity.note(0, 1, t + std::chrono::milliseconds(999));
  activity.note(0, 1, t + std::chrono::seconds(1));
  activity.note(0, 0, t);
  activity.note(1, 0, t + std::chrono::seconds(5));
  CHECK(activity.csv() ==
        "attempt,rank,unix_second,lines,seconds\n"
        "0,0,1000,1,1\n"
        "0,1,1000,2,1\n"
        "0,1,1001,1,1\n"
        "1,0,1005,1,1\n");
}

TEST_CASE("output activity of a long run merges seconds instead of growing without bound") {
  OutputActivity a;
  const auto t0 = std::chrono::system_clock::from_time_t(1'800'000'000);
  std::uint64_t total = 0;
  // 8 chatty ranks for 20000 s: 160000 counters at one a second.
  for (int s = 0; s < 20000; ++s) {
    for (int rank = 0; rank < 8; ++rank) {
      a.note(0, rank, t0 + std::chrono::seconds(s), 3);
      total += 3;
    }
  }
  CHECK(a.seconds_per_row() == 4);
  const std::string csv = a.csv();
  std::uint64_t rows = 0, lines = 0;
  std::istringstream in(csv);
  std::string row;
  std::getline(in, row);  // header
  while (std::getline(in, row)) {
    ++rows;
    const auto second = std::stoll(row.substr(4, row.find(',', 4) - 4));
    CHECK(second % 4 == 0);  // each row starts a 4-second span
    const auto last = row.rfind(',');
    CHECK(row.substr(last + 1) == "4");  // and says so
    const auto before = row.rfind(',', last - 1);
    lines += std::stoull(row.substr(before + 1, last - before - 1));
  }
  CHECK(rows <= kMaxActivityEntries);
  CHECK(lines == total);  // nothing lost in merging
}
