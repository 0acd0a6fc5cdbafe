// A rank log cut short by a full disk (issue 19, item 8): what summary.json and the console say.
#include <catch2/catch.hpp>

#include "launcher/report.hpp"

using namespace xlaunch::launcher;

TEST_CASE("a rank log cut short is named with its rank, path and last byte", "[report]") {
  const LogCut cut{3, 1, "/logs/r/attempt_1/rank_3/stdout.log", 65536, "No space left on device"};
  CHECK(describe_log_cut(cut) ==
        "rank 3's log /logs/r/attempt_1/rank_3/stdout.log stops at byte 65536: No space left on "
        "device; the rest of its output reached the console only");
  RunSummary s;
  CHECK(summary_json(s).find("\"log_cuts\": [],") != std::string::npos);
  s.log_cuts.push_back(cut);
  CHECK(summary_json(s).find("\"log_cuts\": [{\"rank\": 3, \"attempt\": 1, \"log\": "
                             "\"/logs/r/attempt_1/rank_3/stdout.log\", \"stops_at_byte\": 65536, "
                             "\"error\": \"No space left on device\"}],") != std::string::npos);
}
