#include "cluster/etcd_layout.hpp"

#include <catch2/catch.hpp>

using namespace xlaunch::cluster;
using namespace xlaunch::cluster::etcd;

namespace {
Member member(std::int64_t lease, std::int64_t revision, int rank, const std::string& host,
              int local = 2) {
  JoinRecord r;
  r.machine_rank = rank;
  r.host = host;
  r.pid = 100 + lease;
  r.local_processes = local;
  r.version = "1.0";
  r.settings = "s.mixed_precision=no\n";
  return Member{lease, revision, r, "run-" + host, static_cast<int>(30000 + lease)};
}
}  // namespace

TEST_CASE("etcd keys live under /xlaunch/<run_id>/", "[etcd]") {
  CHECK(job_key("job1", "layout") == "/xlaunch/job1/layout");
  CHECK(member_key("job1", 0x1f) == "/xlaunch/job1/members/1f");
  CHECK(round_key("job1", 2, "done/1") == "/xlaunch/job1/round/2/done/1");
  CHECK(lease_of_member_key("job1", "/xlaunch/job1/members/1f") == 0x1f);
  CHECK_FALSE(lease_of_member_key("job1", "/xlaunch/job2/members/1f"));
  CHECK_FALSE(lease_of_member_key("job1", "/xlaunch/job1/members/"));
  CHECK_FALSE(lease_of_member_key("job1", "/xlaunch/job1/members/xyz"));
  CHECK_FALSE(lease_of_member_key("job1", "/xlaunch/job1/layout"));
}

TEST_CASE("etcd join: nothing is decided while too few members are in", "[etcd]") {
  CHECK_FALSE(decide({member(1, 5, -1, "a")}, 2, std::nullopt));
}

TEST_CASE("etcd join: ranks follow arrival when no launcher gives one", "[etcd]") {
  auto d =
      decide({member(7, 9, -1, "late"), member(3, 4, -1, "first"), member(5, 6, -1, "second", 3)},
             3, std::nullopt);
  REQUIRE(d);
  const auto& layout = std::get<Layout>(d->outcome);
  CHECK(d->leases == std::vector<std::int64_t>{3, 5, 7});
  CHECK(d->hosts == std::vector<std::string>{"first", "second", "late"});
  CHECK(d->ports == std::vector<int>{30003, 30005, 30007});
  CHECK(layout.local_processes == std::vector<int>{2, 3, 2});
  CHECK(layout.run_id == "run-first");  // rank 0's run id is the job's
}

TEST_CASE("etcd member values carry the record and the launcher's run id", "[etcd]") {
  Member m = member(1, 1, 3, "hostA");
  Member back;
  decode_member(encode_member(m.record, "20261123-abc", 41234), "k", back);
  CHECK(back.job_run_id == "20261123-abc");
  CHECK(back.store_port == 41234);
  CHECK_THROWS_AS(decode_member("job_run_id=x\nstore_port=70000\nmachine=0\n", "k", back),
                  std::invalid_argument);
  CHECK(back.record.machine_rank == 3);
  CHECK(back.record.host == "hostA");
  CHECK(back.record.settings == m.record.settings);
  CHECK_THROWS_AS(decode_member(xlaunch::cluster::encode(m.record), "k", back),
                  std::invalid_argument);
  CHECK_THROWS_AS(decode_member("job_run_id=x", "k", back), std::invalid_argument);
}

TEST_CASE("etcd join: the first arrivals form the job, later ones are left out", "[etcd]") {
  auto d = decide({member(1, 10, -1, "a"), member(2, 11, -1, "b"), member(3, 12, -1, "c")}, 2,
                  std::nullopt);
  REQUIRE(d);
  CHECK(d->leases == std::vector<std::int64_t>{1, 2});
}

TEST_CASE("etcd join: given machine ranks are used and checked", "[etcd]") {
  auto d = decide({member(1, 10, 1, "a"), member(2, 11, 0, "b")}, 2, std::nullopt);
  REQUIRE(d);
  CHECK(d->leases == std::vector<std::int64_t>{2, 1});
  CHECK(d->hosts == std::vector<std::string>{"b", "a"});

  auto twice = decide({member(1, 10, 0, "a"), member(2, 11, 0, "b")}, 2, std::nullopt);
  REQUIRE(twice);
  const auto& problem = std::get<JoinProblem>(twice->outcome);
  CHECK(problem.exit_code == 2);
  CHECK_THAT(problem.message, Catch::Contains("machine rank 0 was given to two launchers"));

  auto mixed = decide({member(1, 10, 0, "a"), member(2, 11, -1, "b")}, 2, std::nullopt);
  REQUIRE(mixed);
  CHECK_THAT(std::get<JoinProblem>(mixed->outcome).message,
             Catch::Contains("on every machine or on none") && Catch::Contains("b (pid 102)"));
}

TEST_CASE("etcd join: disagreeing settings are the job's problem", "[etcd]") {
  Member odd = member(2, 11, -1, "b");
  odd.record.settings = "s.mixed_precision=bf16\n";
  auto d = decide({member(1, 10, -1, "a"), odd}, 2, std::nullopt);
  REQUIRE(d);
  CHECK_THAT(std::get<JoinProblem>(d->outcome).message, Catch::Contains("mixed_precision"));
  auto total = decide({member(1, 10, -1, "a"), member(2, 11, -1, "b")}, 2, 5);
  REQUIRE(total);
  CHECK_THAT(std::get<JoinProblem>(total->outcome).message, Catch::Contains("--num_processes 5"));
}

TEST_CASE("etcd layout values round-trip", "[etcd]") {
  auto d = *decide({member(11, 1, -1, "h a"), member(22, 2, -1, "b", 4)}, 2, std::nullopt);
  std::get<Layout>(d.outcome).run_id = "run-ha";  // "run-h a" is not a run id: refused
  auto back = decode_decision(encode(d), "k");
  CHECK(back.leases == d.leases);
  CHECK(back.hosts == std::vector<std::string>{"h_a", "b"});
  CHECK(back.ports == std::vector<int>{30011, 30022});
  CHECK(std::get<Layout>(back.outcome).local_processes == std::vector<int>{2, 4});
  CHECK(std::get<Layout>(back.outcome).run_id == "run-ha");

  Decision problem;
  problem.outcome = JoinProblem{2, "they disagree\n  on this"};
  auto p = decode_decision(encode(problem), "k");
  CHECK(p.leases.empty());
  CHECK(std::get<JoinProblem>(p.outcome).message == "they disagree\n  on this");
}

TEST_CASE("malformed etcd layout values are refused", "[etcd]") {
  CHECK_THROWS_AS(decode_decision("", "k"), std::invalid_argument);
  CHECK_THROWS_AS(decode_decision("ok\n2", "k"), std::invalid_argument);
  CHECK_THROWS_AS(decode_decision("members x\nhosts a\nports 1\nok\n2", "k"),
                  std::invalid_argument);
  CHECK_THROWS_AS(decode_decision("members 1 2\nhosts a\nports 1\nok\n2,2", "k"),
                  std::invalid_argument);
  CHECK_THROWS_AS(decode_decision("members 1\nhosts a\nports 1\nok\n2,2", "k"),
                  std::invalid_argument);
  CHECK_THROWS_AS(decode_decision("members 1\nhosts a\nports 1\nmaybe\n2", "k"),
                  std::invalid_argument);
  CHECK_THROWS_AS(decode_decision("members 1\nhosts a\nports 99999\nok\n2", "k"),
                  std::invalid_argument);
  CHECK_THROWS_AS(decode_decision("members 1\nhosts a\nok\n2", "k"), std::invalid_argument);
}

TEST_CASE("too few machines: the message names etcd, who joined and the timeout", "[etcd]") {
  auto p = too_few({member(1, 1, -1, "a")}, 3, "10.0.0.5:2379", std::chrono::seconds(60));
  CHECK(p.exit_code == 1);
  CHECK_THAT(p.message, Catch::Contains("only 1 of 3 machines") &&
                            Catch::Contains("10.0.0.5:2379") && Catch::Contains("60s") &&
                            Catch::Contains("a (pid 101)"));
}

TEST_CASE("etcd elastic: a round's decision ranks its members in the order given", "[etcd]") {
  auto d = elastic_decision({member(5, 9, -1, "b"), member(3, 4, -1, "a", 3)}, "run-b");
  CHECK(d.leases == std::vector<std::int64_t>{5, 3});
  CHECK(d.hosts == std::vector<std::string>{"b", "a"});
  CHECK(d.ports == std::vector<int>{30005, 30003});
  const auto& layout = std::get<Layout>(d.outcome);
  CHECK(layout.local_processes == std::vector<int>{2, 3});
  CHECK(layout.run_id == "run-b");
  // The decision travels through etcd unchanged.
  auto back = decode_decision(encode(d), "k");
  CHECK(back.leases == d.leases);
  CHECK(std::get<Layout>(back.outcome).local_processes == layout.local_processes);
}

TEST_CASE("etcd elastic: a round's members must agree like a fixed job's", "[etcd]") {
  Member other = member(4, 5, -1, "b");
  other.record.version = "2.0";
  auto d = elastic_decision({member(3, 4, -1, "a"), other}, "run-a");
  REQUIRE(std::holds_alternative<JoinProblem>(d.outcome));
  CHECK(std::get<JoinProblem>(d.outcome).exit_code == 2);
}

TEST_CASE("etcd elastic: the next round keeps survivors in order, then newcomers", "[etcd]") {
  Decision previous = elastic_decision(
      {member(7, 2, -1, "first"), member(3, 4, -1, "second"), member(9, 6, -1, "third")}, "r");
  SECTION("a lost member leaves; rank 0 stays rank 0") {
    auto next = next_round(previous, {member(9, 6, -1, "third"), member(7, 2, -1, "first")}, 4);
    REQUIRE(next.members.size() == 2);
    CHECK(next.members[0].lease == 7);
    CHECK(next.members[1].lease == 9);
    REQUIRE(next.lost.size() == 1);
    CHECK(next.lost[0].host == "second");
  }
  SECTION("newcomers join by arrival, up to MAX") {
    auto next = next_round(
        previous,
        {member(20, 12, -1, "late"), member(9, 6, -1, "third"), member(7, 2, -1, "first"),
         member(3, 4, -1, "second"), member(11, 10, -1, "early")},
        4);
    REQUIRE(next.members.size() == 4);
    CHECK(next.members[3].lease == 11);
    CHECK(next.lost.empty());
  }
  SECTION("rank 0 lost: the first survivor becomes rank 0") {
    auto next = next_round(previous, {member(3, 4, -1, "second"), member(9, 6, -1, "third")}, 4);
    REQUIRE(next.members.size() == 2);
    CHECK(next.members[0].lease == 3);
    CHECK(next.lost[0].host == "first");
  }
}

TEST_CASE("etcd elastic: the newest round with a layout", "[etcd]") {
  CHECK_FALSE(latest_layout_round("j", {}));
  CHECK_FALSE(latest_layout_round("j", {"/xlaunch/j/round/3/failure", "/xlaunch/j/layout"}));
  CHECK(latest_layout_round("j", {"/xlaunch/j/round/2/layout", "/xlaunch/j/round/10/layout",
                                  "/xlaunch/j/round/11/go", "/xlaunch/k/round/12/layout",
                                  "/xlaunch/j/round/x/layout"}) == 10);
}

TEST_CASE("etcd listing: members are read from their keys, other keys skipped", "[etcd]") {
  JoinRecord r{-1, "hostA", 42, 2, "1.0", "s.x=1\n"};
  std::vector<KeyValue> kvs{
      {member_key("job1", 0x2a), encode_member(r, "run-a", 29400), 7, 7, 0x2a},
      {job_key("job1", "layout"), "not a member", 8, 8, 0},
      {member_key("job2", 0x2b), "another job's", 9, 9, 0x2b},
  };
  auto members = decode_members("job1", kvs);
  REQUIRE(members.size() == 1);
  CHECK(members[0].lease == 0x2a);
  CHECK(members[0].create_revision == 7);
  CHECK(members[0].job_run_id == "run-a");
  CHECK(members[0].store_port == 29400);
  CHECK(members[0].record.host == "hostA");
  kvs.push_back({member_key("job1", 0x2c), "junk", 10, 10, 0x2c});
  CHECK_THROWS_AS(decode_members("job1", kvs), std::invalid_argument);
}

TEST_CASE("etcd rounds: a lease's rank, and the first member still alive", "[etcd]") {
  Decision d;
  d.leases = {5, 3, 9};
  CHECK(rank_of(d, 5) == 0);
  CHECK(rank_of(d, 9) == 2);
  CHECK_FALSE(rank_of(d, 4));
  CHECK(first_alive(d.leases, {3, 9}) == 3);  // rank order, not lease order
  CHECK(first_alive(d.leases, {9, 5}) == 5);
  CHECK_FALSE(first_alive(d.leases, {1, 2}));
  CHECK_FALSE(first_alive({}, {1}));
}
