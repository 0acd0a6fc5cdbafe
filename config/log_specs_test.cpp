#include "config/log_specs.hpp"

#include <catch2/catch.hpp>

#include "config/usage_error.hpp"

using namespace xlaunch;
using namespace xlaunch::config;

TEST_CASE("redirects and tee: one value for every local rank, or rank:value pairs", "[log_specs]") {
  CHECK(parse_std_spec("--tee", "2", 2) == std::vector<int>{2, 2});
  CHECK(parse_std_spec("--redirects", "0:1,1:2", 3) == std::vector<int>{1, 2, 0});
  CHECK_THROWS_AS(parse_std_spec("--tee", "4", 2), UsageError);
  CHECK_THROWS_AS(parse_std_spec("--tee", "0:9", 2), UsageError);
  CHECK_THROWS_WITH(parse_std_spec("--redirects", "2:1", 2),
                    Catch::Contains("--redirects: '2:1' is not a valid value"));
}

TEST_CASE("local_ranks_filter: local ranks within the count", "[log_specs]") {
  CHECK(parse_rank_filter("0, 2", 3) == std::set<int>{0, 2});
  CHECK_THROWS_WITH(parse_rank_filter("0,5", 3),
                    Catch::Contains("--local_ranks_filter: '5' is not a local rank in 0..2"));
}

TEST_CASE("the console selection: filtered ranks and redirected streams", "[log_specs]") {
  Settings s;
  s.local_ranks_filter = "0,2";
  s.redirects = "1:3";
  const ConsoleSelection c = console_selection(s, 3);
  CHECK(*c.ranks == std::set<int>{0, 2});
  REQUIRE(c.streams.size() == 3);
  CHECK(c.streams[0].stdout_shown);
  CHECK_FALSE(c.streams[1].stdout_shown);
  CHECK_FALSE(c.streams[1].stderr_shown);
  CHECK(c.streams[2].stderr_shown);

  Settings none;
  none.local_ranks_filter = " ";
  CHECK_FALSE(console_selection(none, 2).ranks);
  CHECK(console_selection(none, 2).streams.size() == 2);

  Settings bad_tee;
  bad_tee.tee = "7";
  CHECK_THROWS_WITH(console_selection(bad_tee, 2), Catch::Contains("--tee: '7'"));
}

TEST_CASE("tee is added on top of redirects, as torchrun does", "[log_specs]") {
  Settings s;
  s.redirects = "3";
  s.tee = "3";  // torchrun's -r 3 -t 3: files and console
  for (const ConsoleStreams& c : console_selection(s, 2).streams) {
    CHECK(c.stdout_shown);
    CHECK(c.stderr_shown);
  }
  s.tee = "0:1";  // local rank 0's stdout only
  const ConsoleSelection some = console_selection(s, 2);
  CHECK(some.streams[0].stdout_shown);
  CHECK_FALSE(some.streams[0].stderr_shown);
  CHECK_FALSE(some.streams[1].stdout_shown);
  CHECK_FALSE(some.streams[1].stderr_shown);
  Settings tee_only;
  tee_only.tee = "2";  // nothing redirected: everything shown, as without it
  CHECK(console_selection(tee_only, 1).streams[0].stdout_shown);
  CHECK(console_selection(tee_only, 1).streams[0].stderr_shown);
}
