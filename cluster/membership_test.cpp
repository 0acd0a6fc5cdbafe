#include "cluster/membership.hpp"

#include <catch2/catch.hpp>

using namespace xlaunch::cluster;
using namespace std::chrono_literals;

namespace {

JoinRecord record(int pid, std::string settings = "s.max_restarts=1\n") {
  return JoinRecord{-1, "host" + std::to_string(pid), pid, 2, "0.1.0", settings};
}

}  // namespace

TEST_CASE("round 0 starts at MAX at once, at MIN only after the last call", "[membership]") {
  CHECK_FALSE(first_round_ready(1, 2, 4, true));   // below MIN: never
  CHECK_FALSE(first_round_ready(2, 2, 4, false));  // MIN in, last call running
  CHECK(first_round_ready(2, 2, 4, true));
  CHECK(first_round_ready(4, 2, 4, false));  // MAX in: no reason to wait
  CHECK(first_round_ready(1, 1, 2, true));
}

TEST_CASE("the next round keeps the survivors' order, then newcomers by arrival, up to MAX",
          "[membership]") {
  CHECK(next_members({1, 3, 4}, {3}, {}, 4) == std::vector<int>{1, 4});
  CHECK(next_members({1}, {}, {5, 2}, 4) == std::vector<int>{1, 5, 2});
  CHECK(next_members({1, 2}, {}, {6, 7, 8}, 3) == std::vector<int>{1, 2, 6});
  CHECK(next_members({1, 2}, {2}, {2, 9}, 3) == std::vector<int>{1, 9});  // lost stays out
  CHECK(next_members({1, 2}, {}, {2}, 3) == std::vector<int>{1, 2});      // no duplicates
}

TEST_CASE("a newcomer stops the job only with room for it and a restart left", "[membership]") {
  CHECK(admits_newcomer(1, 1, 2, 0, 1));
  CHECK_FALSE(admits_newcomer(2, 1, 2, 0, 1));  // full
  CHECK_FALSE(admits_newcomer(1, 1, 2, 1, 1));  // no restart left
  CHECK_FALSE(admits_newcomer(1, 0, 2, 0, 1));  // nobody waiting
}

TEST_CASE("elastic layouts re-assign machine ranks in member order", "[membership]") {
  auto a = record(10), b = record(20);
  b.local_processes = 3;
  auto layout = std::get<Layout>(elastic_layout({a, b}, {1, 5}, "job-1"));
  CHECK(layout.local_processes == std::vector<int>{2, 3});
  CHECK(layout.slots == std::vector<int>{1, 5});
  CHECK(layout.run_id == "job-1");
  CHECK(layout.rank_offset(1) == 2);
  auto problem =
      std::get<JoinProblem>(elastic_layout({a, record(30, "s.max_restarts=0\n")}, {1, 2}, "j"));
  CHECK(problem.exit_code == 2);
  CHECK_THAT(problem.message, Catch::Contains("max_restarts: machine 0 (host10) has 1, machine 1 "
                                              "(host30) has 0"));
}

TEST_CASE("membership changes are restartable and blame no worker", "[membership]") {
  FailureRecord joined = machine_joined(record(42), 1);
  CHECK(is_membership_change(joined));
  CHECK(joined.describe() == "machine 1 (host42): joined the job (pid 42); re-forming it");
  FailureRecord left = machine_left(2, "hostB", 3s);
  CHECK(is_membership_change(left));
  CHECK_THAT(left.describe(), Catch::StartsWith("machine 2 (hostB): launcher lost: no heartbeat "
                                                "for 3s"));
  FailureRecord worker{1, "hostB", 5, 7, true, "exited with code 7"};
  CHECK_FALSE(is_membership_change(worker));
  FailureRecord interrupted{0, "hostA", -1, 130, false, "launcher interrupted by SIGINT"};
  CHECK_FALSE(is_membership_change(interrupted));
}

TEST_CASE("below MIN the failure names the lost and the present machines", "[membership]") {
  JoinProblem p = too_few_machines({record(1)}, {record(2), record(3)}, 3, 5s);
  CHECK(p.exit_code == 1);
  CHECK_THAT(p.message, Catch::Contains("1 machine left, fewer than the minimum 3") &&
                            Catch::Contains("within --rdzv_timeout 5s") &&
                            Catch::Contains("lost: host2 (pid 2), host3 (pid 3)") &&
                            Catch::Contains("present: host1 (pid 1)"));
}

TEST_CASE("the last call opens when MIN are in, once, and runs its timeout", "[membership]") {
  using Clock = LastCall::Clock;
  const Clock::time_point t0{};
  LastCall call(2, 30s);
  call.count(1, t0);
  CHECK_FALSE(call.open());
  CHECK_FALSE(call.over(t0 + 1h));  // never over before it opened
  CHECK(call.left(t0) == 0ms);
  call.count(2, t0 + 5s);
  CHECK(call.open());
  CHECK(call.left(t0 + 5s) == 30s);
  call.count(3, t0 + 20s);  // more arrivals do not restart it
  CHECK(call.left(t0 + 20s) == 15s);
  CHECK_FALSE(call.over(t0 + 34s));
  CHECK(call.over(t0 + 35s));
  CHECK(call.left(t0 + 36s) == -1s);
}

TEST_CASE("the last call closes when fewer than MIN are in again", "[membership]") {
  using Clock = LastCall::Clock;
  const Clock::time_point t0{};
  LastCall call(2, 30s);
  call.count(2, t0);
  call.count(1, t0 + 10s);  // one withdrew: the --rdzv_timeout wait is back
  CHECK_FALSE(call.open());
  CHECK_FALSE(call.over(t0 + 1h));
  call.count(2, t0 + 50s);  // MIN again: a whole last call
  CHECK(call.left(t0 + 50s) == 30s);
}

TEST_CASE("too few to start names who joined", "[membership]") {
  JoinProblem p = too_few_to_start({record(1), record(2)}, 3, 2500ms);
  CHECK(p.exit_code == 1);
  CHECK(p.message ==
        "only 2 of the minimum 3 machines joined within --rdzv_timeout 2.5s "
        "(joined: host1 (pid 1), host2 (pid 2)); start more launchers with the "
        "same --main_process_ip/port, or lower MIN");
}
