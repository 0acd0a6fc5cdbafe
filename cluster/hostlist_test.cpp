#include "cluster/hostlist.hpp"

#include <catch2/catch.hpp>

using xlaunch::cluster::expand_hostlist;
using V = std::vector<std::string>;

TEST_CASE("hostlists expand like SLURM's", "[hostlist]") {
  CHECK(expand_hostlist("node1") == V{"node1"});
  CHECK(expand_hostlist("gpu[01-04,07]") == V{"gpu01", "gpu02", "gpu03", "gpu04", "gpu07"});
  CHECK(expand_hostlist("a[1-2]-b[3,5]") == V{"a1-b3", "a1-b5", "a2-b3", "a2-b5"});
  CHECK(expand_hostlist("n1,n[3-4],login") == V{"n1", "n3", "n4", "login"});
  CHECK(expand_hostlist("x[8-10]") == V{"x8", "x9", "x10"});
  CHECK(expand_hostlist("x[098-101]") == V{"x098", "x099", "x100", "x101"});
  CHECK(expand_hostlist("rack[1]") == V{"rack1"});
  CHECK(expand_hostlist("") == V{});
}

TEST_CASE("malformed hostlists name the problem", "[hostlist]") {
  CHECK_THROWS_WITH(expand_hostlist("gpu[01-04"), Catch::Contains("'[' without ']'"));
  CHECK_THROWS_WITH(expand_hostlist("gpu01]"), Catch::Contains("']' without '['"));
  CHECK_THROWS_WITH(expand_hostlist("gpu[4-1]"), Catch::Contains("runs backwards"));
  CHECK_THROWS_WITH(expand_hostlist("gpu[a-b]"), Catch::Contains("not a number"));
  CHECK_THROWS_WITH(expand_hostlist("gpu[[1]]"), Catch::Contains("nested"));
  CHECK_THROWS_WITH(expand_hostlist("g[0-999999999]"), Catch::Contains("too large"));
  CHECK_THROWS_WITH(expand_hostlist("a[0-999]b[0-999]c[0-9]"), Catch::Contains("too many"));
}
