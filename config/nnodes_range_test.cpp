// --nnodes / num_machines: a count, or torchrun's elastic MIN:MAX.
#include <catch2/catch.hpp>

#include "config/schema.hpp"

using namespace xlaunch::config;

namespace {

std::optional<Settings> parse(std::string_view text) {
  Settings s;
  std::string notice;
  if (!find_key("num_machines")->parse(text, s, notice)) return std::nullopt;
  return s;
}

}  // namespace

TEST_CASE("num_machines takes a count or MIN:MAX", "[config][nnodes]") {
  auto fixed = parse("3");
  REQUIRE(fixed);
  CHECK(fixed->num_machines == 3);
  CHECK(fixed->min_machines == 3);
  CHECK(fixed->max_machines == 3);
  CHECK(find_key("num_machines")->print(*fixed) == "3");

  auto range = parse("1:4");
  REQUIRE(range);
  CHECK(range->num_machines == 4);  // the most machines the job can have
  CHECK(range->min_machines == 1);
  CHECK(range->max_machines == 4);
  CHECK(find_key("num_machines")->print(*range) == "1:4");

  CHECK(find_key("num_machines")->print(*parse("2:2")) == "2");  // not elastic
  for (const char* bad : {"0", "3:2", "0:2", "1:", ":2", "a:b", "1:2:3", "1:70000"}) {
    INFO(bad);
    CHECK_FALSE(parse(bad));
  }
}
