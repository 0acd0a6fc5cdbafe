// The report's size does not grow with the run's length or ranks (issue 19, item 6).
#include "report/picture_bounds.hpp"

#include <catch2/catch.hpp>
#include <map>

#include "report/report_html.hpp"

using namespace xlaunch::report;

namespace {

constexpr std::int64_t kWeek = 7 * 24 * 3600;
constexpr std::int64_t kT0 = 1'700'000'000;

// 8 ranks that wrote a line every second for a week.
RunPicture week_long_run() {
  RunPicture p;
  p.run_id = "week";
  p.world_size = 8;
  for (int rank = 0; rank < 8; ++rank) {
    p.spans.push_back(RankSpan{rank, 0, 100 + rank, kT0 * 1000, (kT0 + kWeek) * 1000, 0, {}});
    for (std::int64_t t = 0; t < kWeek; t += 1) p.activity.push_back({0, rank, kT0 + t, 1, 1});
  }
  for (std::int64_t t = 0; t < kWeek; t += 1) {
    xlaunch::gpu::GpuSample s;
    s.unix_ms = (kT0 + t) * 1000;
    s.utilization = t % 2 ? 100 : 0;
    s.memory_used = static_cast<std::uint64_t>(t);
    s.memory_total = 1 << 30;
    p.gpu.push_back(s);
  }
  return p;
}

}  // namespace

TEST_CASE("a week of activity is binned to a bounded number of bars per lane", "[report]") {
  const RunPicture p = week_long_run();
  const auto bins = bin_activity(p.activity, kMaxLanePoints);
  std::map<int, std::size_t> per_rank;
  std::map<int, std::uint64_t> lines;
  for (const ActivityPoint& a : bins) {
    ++per_rank[a.rank];
    lines[a.rank] += a.lines;
    CHECK(a.seconds == 404);  // ceil(604800 / 1500)
  }
  REQUIRE(per_rank.size() == 8);
  for (const auto& [rank, n] : per_rank) CHECK(n <= kMaxLanePoints);
  for (const auto& [rank, n] : lines) CHECK(n == kWeek);  // no line lost
  const auto gpu = bin_gpu(p.gpu, kMaxLanePoints);
  CHECK(gpu.size() <= kMaxLanePoints);
  CHECK(gpu.back().memory_used == kWeek - 1);  // the highest use of the last bin
  CHECK(gpu.front().utilization == 50);        // the mean of 0 and 100
  // A short run is drawn as it was.
  const std::vector<ActivityPoint> few{{0, 1, kT0, 3, 1}, {0, 1, kT0 + 9, 2, 1}};
  CHECK(bin_activity(few, kMaxLanePoints).size() == 2);
}

TEST_CASE("the page stays small for a week-long run and a run that spans millennia", "[report]") {
  const std::string week = render_report_html(week_long_run());
  CHECK(week.size() < 4'000'000);  // was hundreds of MB: a bar per rank and second
  RunPicture ages;
  ages.spans.push_back(RankSpan{0, 0, 1, -62'135'596'800'000, 253'402'300'799'000, 0, {}});
  const std::string html = render_report_html(ages);
  CHECK(html.size() < 100'000);  // one axis tick per day: 409 MB
}

TEST_CASE("no more than kMaxLanes lanes are drawn, and the page says so", "[report]") {
  RunPicture many;
  for (int rank = 0; rank < 2000; ++rank)
    many.spans.push_back(RankSpan{rank, 0, rank, 0, 1000, 0, {}});
  const std::string html = render_report_html(many);
  CHECK(html.find("1488 more lane(s) not drawn") != std::string::npos);
  CHECK(html.find("data-rank=\"511\"") != std::string::npos);
  CHECK(html.find("data-rank=\"512\"") == std::string::npos);
}
