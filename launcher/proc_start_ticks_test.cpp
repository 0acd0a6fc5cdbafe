#include "launcher/proc_start_ticks.hpp"

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>

using xlaunch::launcher::parse_start_ticks;

TEST_CASE("parse_start_ticks reads field 22 of /proc/PID/stat", "[proc]") {
  const std::string tail =
      " S 1 4242 4242 0 -1 4194560 120 0 0 0 3 1 0 0 20 0 1 0 987654 1000000 100 rest\n";
  CHECK(parse_start_ticks("4242 (sleep)" + tail) == 987654ULL);
  // A command name with blanks and parentheses, like the ones a process may give itself.
  CHECK(parse_start_ticks("4242 (a) b (c) d)" + tail) == 987654ULL);
  CHECK_FALSE(parse_start_ticks("4242 (sleep) S 1 2 3"));  // cut short
  CHECK_FALSE(parse_start_ticks("no parenthesis at all"));
  CHECK_FALSE(parse_start_ticks("1 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 x1 9"));
}

TEST_CASE("parse_start_ticks agrees with this process's own stat", "[proc]") {
  std::ifstream in("/proc/self/stat");
  std::stringstream text;
  text << in.rdbuf();
  const auto ticks = parse_start_ticks(text.str());
  REQUIRE(ticks);
  CHECK(*ticks > 0);
}
