#include "cluster/blame.hpp"

#include <catch2/catch.hpp>
#include <csignal>

#include "cluster/membership.hpp"

using namespace xlaunch::cluster;
using namespace std::chrono_literals;

TEST_CASE("a host outside the known ranks reads as '?'", "[blame]") {
  const std::vector<std::string> hosts{"hostA", "hostB"};
  CHECK(host_of(hosts, 1) == "hostB");
  CHECK(host_of(hosts, 2) == "?");
  CHECK(host_of(hosts, -1) == "?");
  CHECK(host_of({}, 0) == "?");
}

TEST_CASE("a lost launcher ends a fixed job and re-forms an elastic one", "[blame]") {
  FailureRecord beat = heartbeat_lost(2, "hostC", 1500ms, false);
  CHECK_FALSE(beat.restartable);
  CHECK(beat.exit_code == 1);
  CHECK(beat.rank == -1);
  CHECK(beat.describe() ==
        "machine 2 (hostC): launcher lost: no heartbeat for 1.5s (--heartbeat_timeout)");
  FailureRecord lease = lease_lost(1, "hostB", 3s, false);
  CHECK_FALSE(lease.restartable);
  CHECK(lease.describe() ==
        "machine 1 (hostB): launcher lost: its etcd lease expired (--heartbeat_timeout 3s)");
  // Elastic: both backends say the same, a change of members.
  for (const FailureRecord& r :
       {heartbeat_lost(1, "hostB", 3s, true), lease_lost(1, "hostB", 3s, true)}) {
    CHECK(is_membership_change(r));
    CHECK(r.describe() == machine_left(1, "hostB", 3s).describe());
  }
}

TEST_CASE("a lost backend and a rank claimed twice are not restartable", "[blame]") {
  FailureRecord store = store_unreachable("hostA", "10.0.0.1", 29500, 30s);
  CHECK_FALSE(store.restartable);
  CHECK(store.describe() ==
        "machine 0 (hostA): launcher lost: its store at 10.0.0.1:29500 is "
        "unreachable (--heartbeat_timeout 30s)");
  FailureRecord etcd = etcd_unreachable(3, "hostD", "e1:2379,e2:2379", 2s, "connection refused");
  CHECK_FALSE(etcd.restartable);
  CHECK(etcd.describe() ==
        "machine 3 (hostD): etcd at e1:2379,e2:2379 unreachable for "
        "--heartbeat_timeout 2s (connection refused)");
  FailureRecord own = own_lease_expired(0, "hostA");
  CHECK_FALSE(own.restartable);
  CHECK_THAT(own.cause, Catch::StartsWith("this launcher's etcd lease expired"));
  JoinRecord late{1, "hostE", 77, 2, "0.1.0", ""};
  JoinRecord holder{1, "hostB", 12, 2, "0.1.0", ""};
  JoinProblem refused = late_duplicate(late, holder, "exp-1");
  CHECK(refused.exit_code == 2);  // a configuration error, for the newcomer only
  CHECK(refused.message ==
        "the job with run id 'exp-1' already runs with machine rank 1 on hostB (pid 12); this "
        "launcher (hostE, pid 77) was not taken in, and the job goes on. Give each machine its "
        "own --machine_rank, or this job its own --rdzv_id");
}

TEST_CASE("a verdict is 'ok' or the round's failure, and reads back", "[blame]") {
  CHECK(encode_verdict(std::nullopt) == "ok");
  CHECK_FALSE(decode_verdict("ok", "k"));
  FailureRecord worker{1, "hostB", 5, 7, true, "exited with code 7"};
  auto back = decode_verdict(encode_verdict(worker), "k");
  REQUIRE(back);
  CHECK(back->describe() == worker.describe());
  CHECK(back->exit_code == 7);
  CHECK(back->restartable);
  CHECK_THROWS_AS(decode_verdict("neither", "k"), MalformedRecord);
}

TEST_CASE("a launcher interrupted in the join names itself and its signal", "[blame]") {
  JoinProblem ranked = join_interrupted(JoinRecord{1, "hostB", 12, 2, "0.1.0", ""}, SIGINT);
  CHECK(ranked.exit_code == 130);  // as a launcher interrupted mid-run
  CHECK(ranked.message ==
        "machine 1 (hostB): launcher interrupted by SIGINT while joining the job");
  JoinProblem by_arrival = join_interrupted(JoinRecord{-1, "hostC", 34, 1, "0.1.0", ""}, SIGTERM);
  CHECK(by_arrival.exit_code == 143);
  CHECK(by_arrival.message ==
        "hostC (pid 34): launcher interrupted by SIGTERM while joining the job");
}
