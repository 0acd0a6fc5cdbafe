#include "report/run_picture.hpp"

#include <catch2/catch.hpp>
#include <limits>
#include <string>
#include <vector>

#include "report/report_html.hpp"

using namespace xlaunch::report;

namespace {

const char* kSummary = R"({
  "run_id": "r1", "host": "h", "world_size": 2, "exit_code": 3, "interrupted_by": null,
  "workers": [
    {"rank": 0, "local_rank": 0, "attempt": 0, "pid": 10, "exit_code": null, "signal": 15,
     "signal_name": "SIGTERM", "stopped_by_launcher": true, "start": "2026-11-21T23:05:01.123Z",
     "end": "2026-11-21T23:05:03.000Z"},
    {"rank": 1, "local_rank": 1, "attempt": 0, "pid": 11, "exit_code": 3, "signal": null,
     "signal_name": null, "stopped_by_launcher": false, "start": "2026-11-21T23:05:01.200Z",
     "end": "2026-11-21T23:05:02.500Z"},
    {"rank": 1, "local_rank": 1, "attempt": 1, "pid": 12, "exit_code": 3, "signal": null,
     "signal_name": null, "stopped_by_launcher": false, "start": "2026-11-21T23:05:04.000Z",
     "end": null}
  ],
  "not_started": [],
  "root_cause": {"rank": 1, "local_rank": 1, "attempt": 1, "host": "h",
                 "description": "exited with code 3", "error_file": null, "stderr_tail": []}
})";

}  // namespace

TEST_CASE("ISO times parse to epoch milliseconds") {
  CHECK(parse_iso_ms("1970-01-01T00:00:00.000Z") == 0);
  CHECK(parse_iso_ms("1970-01-02T00:00:01.5Z") == 86401500);
  CHECK(parse_iso_ms("2000-03-01T00:00:00Z") == 951868800000);
  CHECK_FALSE(parse_iso_ms("2000-13-01T00:00:00Z"));
  CHECK_FALSE(parse_iso_ms("yesterday"));
  // Outside the times xlaunch writes (1970 to about 2514), as for times in seconds.
  CHECK_FALSE(parse_iso_ms("0001-01-01T00:00:00Z"));
  CHECK_FALSE(parse_iso_ms("1969-12-31T23:59:59Z"));
  CHECK_FALSE(parse_iso_ms("9999-12-31T23:59:59Z"));
  CHECK(parse_iso_ms("2500-01-01T00:00:00Z"));
}

TEST_CASE("activity.csv rows say the seconds they cover; big counts are kept, at the top") {
  const auto points = parse_activity_csv(
      "attempt,rank,unix_second,lines,seconds\n0,0,100,7,4\n0,1,100,8796093022208,1\n"
      "0,1,104,1,0\n");
  REQUIRE(points.size() == 2);  // a row of 0 seconds is no row
  CHECK(points[0].seconds == 4);
  CHECK(points[1].lines == std::numeric_limits<unsigned>::max());
  const auto old_rows = parse_activity_csv("attempt,rank,unix_second,lines\n0,0,100,7\n");
  REQUIRE(old_rows.size() == 1);
  CHECK(old_rows[0].seconds == 1);
}

TEST_CASE("summary.json, activity.csv and gpu.csv make the picture") {
  const RunPicture p =
      parse_run_picture(kSummary, "attempt,rank,unix_second,lines\n0,1,100,7\nbad\n",
                        "unix_ms,gpu,utilization,memory_used,memory_total,processes\n"
                        "5,0,97,1,2,\n");
  CHECK(p.run_id == "r1");
  CHECK(p.exit_code == 3);
  REQUIRE(p.spans.size() == 3);
  CHECK(p.spans[0].signal_name == "SIGTERM");
  CHECK(p.spans[0].stopped_by_launcher);
  CHECK(p.spans[0].start_ms == *parse_iso_ms("2026-11-21T23:05:01.123Z"));
  CHECK_FALSE(p.spans[1].root_cause);  // the root cause is attempt 1's
  CHECK(p.spans[2].root_cause);
  CHECK_FALSE(p.spans[2].end_ms);
  CHECK(p.root_cause == "rank 1 exited with code 3 (attempt 1)");
  REQUIRE(p.activity.size() == 1);
  CHECK(p.activity[0].lines == 7);
  REQUIRE(p.gpu.size() == 1);
  CHECK(p.stalls.empty());  // no stall field: fine
}

TEST_CASE("a stall field is read in the shapes it may take, and ignored otherwise") {
  auto with_stall = [](const std::string& stall) {
    std::string s = kSummary;
    s.insert(s.rfind('}'), ", \"stall\": " + stall);
    return parse_run_picture(s, "", "");
  };
  auto p =
      with_stall(R"({"start": "2026-11-21T23:05:05.000Z", "end": "2026-11-21T23:05:10.000Z"})");
  REQUIRE(p.stalls.size() == 1);
  CHECK(p.stalls[0].end_ms - p.stalls[0].start_ms == 5000);
  p = with_stall(R"([{"detected_at": "2026-11-21T23:05:10.000Z", "timeout_s": 3}])");
  REQUIRE(p.stalls.size() == 1);
  CHECK(p.stalls[0].end_ms - p.stalls[0].start_ms == 3000);
  // The shape xlaunch's stall report writes (docs/diagnose.md).
  p = with_stall(R"({"at": "2026-11-21T23:05:10.000Z", "window_seconds": 4.0,
                     "odd_one_out": "rank 1", "ranks": [], "stacks": []})");
  REQUIRE(p.stalls.size() == 1);
  CHECK(p.stalls[0].start_ms == *parse_iso_ms("2026-11-21T23:05:06.000Z"));
  CHECK(p.stalls[0].note == "no progress for 4s; odd one out: rank 1");
  CHECK(with_stall("\"weird\"").stalls.empty());
  CHECK(with_stall(R"({"ranks": [1]})").stalls.empty());
  CHECK(with_stall("null").stalls.empty());
}

TEST_CASE("a broken summary.json is an error that says what is wrong") {
  CHECK_THROWS_WITH(parse_run_picture("{\"workers\": [", "", ""),
                    Catch::Contains("not valid JSON"));
  CHECK_THROWS_WITH(parse_run_picture("{}", "", ""), Catch::Contains("no \"workers\" list"));
  CHECK_THROWS_WITH(parse_run_picture(R"({"workers": [{"rank": 0}]})", "", ""),
                    Catch::Contains("workers[0] lacks a rank or a start time"));
}

TEST_CASE("numbers out of any run's range in a tampered run folder are ignored, not cast") {
  // Each was undefined behaviour (a double cast out of range, a sum past INT64_MAX) in the
  // picture or its HTML; the run folder may have been changed by anyone.
  const std::string w = R"("world_size":1e300,"exit_code":-1e300)";
  const std::string start = R"("start":"2026-01-01T00:00:00Z")";
  struct Case {
    std::string summary, activity, gpu;
  };
  const std::vector<Case> cases = {
      {"{" + w + R"(,"workers":[{"rank":0,"start":0,"end":1e300}]})", "", ""},
      {"{" + w + R"(,"workers":[{"rank":0,)" + start + "}]}",
       "a,r,u,l\n0,0,9223372036854775807,1\n0,0,-9223372036854775807,1\n", ""},
      {"{" + w + R"(,"workers":[{"rank":0,)" + start + "}]}", "",
       "h\n9223372036854775807,0,50,1,2,\n-9223372036854775807,0,50,1,2,\n"},
      {"{" + w + R"(,"workers":[{"rank":0,"pid":1e30,"attempt":-1e30,"start":0}]})", "", ""},
      {"{" + w + R"(,"workers":[{"rank":0,"start":0}],"stall":{"start":-9e15,"end":9e15}})", "",
       ""},
      {"{" + w + R"(,"workers":[{"rank":0,"start":0}],"stall":{"end":0,"window_seconds":1e300}})",
       "", ""},
  };
  for (const Case& c : cases) {
    INFO(c.summary);
    const RunPicture p = parse_run_picture(c.summary, c.activity, c.gpu);
    CHECK(p.world_size == 0);
    CHECK(p.exit_code == 0);
    CHECK(p.activity.empty());
    CHECK(p.gpu.empty());
    for (const RankSpan& s : p.spans) {
      CHECK(s.attempt == 0);
      CHECK(s.pid == 0);
      CHECK((!s.end_ms || *s.end_ms <= (std::int64_t{1} << 44)));
    }
    CHECK(p.stalls.empty());
    CHECK_FALSE(render_report_html(p).empty());
  }
  // A rank or start that cannot be read is the picture's error, as a missing one is.
  CHECK_THROWS_AS(parse_run_picture(R"({"workers":[{"rank":1e30,"start":0}]})", "", ""),
                  PictureError);
  CHECK_THROWS_AS(parse_run_picture(R"({"workers":[{"rank":0,"start":1e300}]})", "", ""),
                  PictureError);
}
