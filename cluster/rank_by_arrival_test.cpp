// Machine ranks for launchers that came without one (a c10d launcher that found the
// endpoint's port taken on its host and joined as a client): the ranks nobody claims,
// lowest first, in arrival order, the same on machine 0 and on every follower.
#include <catch2/catch.hpp>

#include "cluster/agent.hpp"

using namespace xlaunch::cluster;
using namespace std::chrono_literals;

namespace {

JoinRecord record(int rank, std::string host) {
  return JoinRecord{rank, std::move(host), 100, 1, "0.1.0", "s.max_restarts=0\n"};
}

}  // namespace

TEST_CASE("launchers without a rank take the unclaimed ones in arrival order", "[agent]") {
  std::vector<JoinRecord> arrivals{record(-1, "b"), record(0, "a"), record(-1, "c"),
                                   record(1, "d")};
  assign_unclaimed_ranks(arrivals, 4);
  CHECK(arrivals[0].machine_rank == 2);
  CHECK(arrivals[1].machine_rank == 0);
  CHECK(arrivals[2].machine_rank == 3);
  CHECK(arrivals[3].machine_rank == 1);
  auto layout = decide_layout(arrivals, 4, std::nullopt);
  REQUIRE(std::holds_alternative<Layout>(layout));
  CHECK(std::get<Layout>(layout).world_size() == 4);
}

TEST_CASE("a rankless arrival beyond the free ranks stays unranked and is refused", "[agent]") {
  std::vector<JoinRecord> arrivals{record(0, "a"), record(0, "b"), record(-1, "c")};
  assign_unclaimed_ranks(arrivals, 2);
  CHECK(arrivals[2].machine_rank == 1);
  auto problem = std::get<JoinProblem>(decide_layout(arrivals, 2, std::nullopt));
  CHECK(problem.message.find("machine rank 0 was given to two launchers") != std::string::npos);
}

TEST_CASE("a timed-out join names rankless arrivals by the rank they would take", "[agent]") {
  JoinProblem p = missing_machines({record(0, "a"), record(-1, "b")}, 3, 5s);
  CHECK(p.message.find("machine rank 2 did not join") != std::string::npos);
  CHECK(p.message.find("joined: 0 (a), 1 (b)") != std::string::npos);
}
