// --stall_timeout below the millisecond the monitor measures (issue 19, item 11).
#include <catch2/catch.hpp>

#include "config/schema.hpp"
#include "config/usage_error.hpp"
#include "launcher/launch_plan.hpp"

using namespace xlaunch;
using namespace xlaunch::launcher;

TEST_CASE("a stall timeout too short to measure is refused, not turned off", "[plan]") {
  config::Settings s;
  s.stall_timeout = 1e-9;  // became 0 ms, which is "off"
  CHECK_THROWS_WITH(make_plan(s, {"/bin/true"}, {}, "run1"),
                    Catch::Contains("--stall_timeout 1e-09 is below 0.001 seconds") &&
                        Catch::Contains("use 0 to turn stall detection off"));
  CHECK_THROWS_AS(make_plan(s, {"/bin/true"}, {}, "run1"), UsageError);
  s.stall_timeout = 0.001;
  CHECK(make_plan(s, {"/bin/true"}, {}, "run1").stall_timeout == std::chrono::milliseconds(1));
}
