#include "cluster/agent.hpp"

#include <catch2/catch.hpp>
#include <future>
#include <thread>

#include "rendezvous/store_server.hpp"

using namespace xlaunch::cluster;
using namespace std::chrono_literals;

namespace {

JoinRecord record(int rank, int local, std::string settings = "s.max_restarts=0\n") {
  return JoinRecord{rank, "host" + std::to_string(rank), 100 + rank, local, "0.1.0", settings};
}

AgentOptions options(std::uint16_t port, int machines, int rank, int local) {
  AgentOptions o;
  o.run_id = "t";
  o.job_run_id = "run-of-machine-" + std::to_string(rank);
  o.num_machines = machines;
  o.machine_rank = rank;
  o.store_port = port;
  o.host = "host" + std::to_string(rank);
  o.pid = 100 + rank;
  o.local_processes = local;
  o.version = "0.1.0";
  o.settings = agreed_settings({{"max_restarts", "0"}});
  o.rdzv_timeout = 20s;
  o.heartbeat_timeout = 2s;
  return o;
}

// An in-process store on a free loopback port, as machine 0's launcher hosts it.
struct Store {
  xlaunch::rendezvous::StoreServer server{
      xlaunch::rendezvous::ListeningSocket::bind("127.0.0.1", 0)};
  Store() { server.start(); }
  std::uint16_t port() const { return server.port(); }
};

}  // namespace

TEST_CASE("records and layouts survive the store", "[agent]") {
  JoinRecord r = record(3, 2, agreed_settings({{"b", "2"}, {"a", "x\ny"}}));
  JoinRecord back = decode_join(encode(r));
  CHECK(back.machine_rank == 3);
  CHECK(back.host == "host3");
  CHECK(back.pid == 103);
  CHECK(back.local_processes == 2);
  CHECK(back.settings == "s.a=x y\ns.b=2\n");
  FailureRecord f{1, "hostB", 3, 7, true, "exited with code 7"};
  FailureRecord fb = decode_failure(encode(f));
  CHECK(fb.describe() == "machine 1 (hostB), rank 3: exited with code 7");
  CHECK(fb.restartable);
  FailureRecord lost{2, "hostC", -1, 1, false, "launcher lost"};
  CHECK(decode_failure(encode(lost)).describe() == "machine 2 (hostC): launcher lost");
  auto layout = std::get<Layout>(decode_layout(encode_layout(Layout{{2, 3, 1}, "exp-7"})));
  CHECK(layout.run_id == "exp-7");
  CHECK(layout.world_size() == 6);
  CHECK(layout.rank_offset(0) == 0);
  CHECK(layout.rank_offset(2) == 5);
  auto problem = std::get<JoinProblem>(decode_layout(encode_layout(JoinProblem{1, "a\nb"})));
  CHECK(problem.exit_code == 1);
  CHECK(problem.message == "a\nb");
  CHECK_THROWS_AS(decode_join("machine=x"), std::invalid_argument);
}

TEST_CASE("machine 0 lays out ranks by machine rank, whatever the arrival order", "[agent]") {
  auto decision = decide_layout({record(2, 1), record(0, 2), record(1, 4)}, 3, std::nullopt);
  Layout layout = std::get<Layout>(decision);
  CHECK(layout.local_processes == std::vector<int>{2, 4, 1});
  CHECK(layout.rank_offset(1) == 2);
  CHECK(layout.rank_offset(2) == 6);
  CHECK(std::holds_alternative<Layout>(decide_layout({record(0, 2), record(1, 2)}, 2, 4)));
  auto sum = std::get<JoinProblem>(decide_layout({record(0, 2), record(1, 1)}, 2, 4));
  CHECK_THAT(sum.message, Catch::Contains("--num_processes 4") && Catch::Contains("add up to 3"));
}

TEST_CASE("duplicates, versions and settings that differ are named", "[agent]") {
  auto dup =
      std::get<JoinProblem>(decide_layout({record(0, 1), record(1, 1), record(1, 1)}, 3, {}));
  CHECK(dup.exit_code == 2);
  CHECK_THAT(dup.message, Catch::Contains("machine rank 1 was given to two launchers"));
  JoinRecord old = record(1, 1);
  old.version = "0.0.9";
  auto version = std::get<JoinProblem>(decide_layout({record(0, 1), old}, 2, {}));
  CHECK_THAT(version.message, Catch::Contains("machine 1 (host1) runs 0.0.9"));
  auto settings = std::get<JoinProblem>(
      decide_layout({record(0, 1), record(1, 1, "s.max_restarts=2\n")}, 2, {}));
  CHECK_THAT(settings.message,
             Catch::Contains("max_restarts: machine 0 (host0) has 0, machine 1 (host1) has 2"));
  auto range = std::get<JoinProblem>(decide_layout({record(0, 1), record(5, 1)}, 2, {}));
  CHECK_THAT(range.message, Catch::Contains("machine rank 5, outside 0..1"));
}

TEST_CASE("missing machines are listed with the ones that joined", "[agent]") {
  JoinProblem p = missing_machines({record(0, 1), record(2, 1)}, 4, 5s);
  CHECK(p.exit_code == 1);
  CHECK_THAT(p.message,
             Catch::Contains("machine ranks 1, 3 did not join within --rdzv_timeout 5s") &&
                 Catch::Contains("joined: 0 (host0), 2 (host2)"));
}

TEST_CASE("three launchers join one store and agree on the layout", "[agent][store]") {
  Store store;
  std::vector<std::future<Layout>> joins;
  std::vector<std::unique_ptr<Agent>> agents;
  const int locals[] = {2, 1, 3};
  for (int m = 2; m >= 0; --m) {  // machine 0 last: the others wait for its store's answer
    agents.push_back(std::make_unique<Agent>(options(store.port(), 3, m, locals[m])));
  }
  for (auto& agent : agents)
    joins.push_back(std::async(std::launch::async, [&] { return agent->join(); }));
  for (auto& join : joins) {
    Layout layout = join.get();
    CHECK(layout.local_processes == std::vector<int>{2, 1, 3});
    CHECK(layout.run_id == "run-of-machine-0");  // one job, one run id
  }
}

TEST_CASE("a machine that never comes is named on every launcher", "[agent][store]") {
  Store store;
  auto make = [&](int m) {
    AgentOptions o = options(store.port(), 3, m, 1);
    o.rdzv_timeout = 300ms;
    return std::make_unique<Agent>(o);
  };
  auto a0 = make(0);
  auto a2 = make(2);
  auto f2 = std::async(std::launch::async, [&] { return a2->join(); });
  try {
    a0->join();
    FAIL("machine 0 joined without machine 1");
  } catch (const AgentError& e) {
    CHECK(e.exit_code() == 1);
    CHECK_THAT(e.what(), Catch::Contains("machine rank 1 did not join") &&
                             Catch::Contains("joined: 0 (host0), 2 (host2)"));
  }
  CHECK_THROWS_WITH(f2.get(), Catch::Contains("machine rank 1 did not join"));
}

TEST_CASE("a worker failure on one machine reaches the others, and every verdict agrees",
          "[agent][store]") {
  Store store;
  Agent a0(options(store.port(), 2, 0, 1));
  Agent a1(options(store.port(), 2, 1, 1));
  auto j1 = std::async(std::launch::async, [&] { return a1.join(); });
  a0.join();
  j1.get();
  std::promise<FailureRecord> seen_by_0;
  a0.start_monitor([&](int round, const FailureRecord& f) {
    CHECK(round == 0);
    seen_by_0.set_value(f);
  });
  a1.start_monitor([](int, const FailureRecord&) {});
  FailureRecord failure{1, "host1", 1, 7, true, "exited with code 7"};
  a1.report_failure(0, failure);
  CHECK(seen_by_0.get_future().get().describe() == failure.describe());
  auto v1 = std::async(std::launch::async, [&] { return a1.finish_round(0, failure); });
  auto v0 = a0.finish_round(0, std::nullopt);
  REQUIRE(v0);
  CHECK(v0->describe() == "machine 1 (host1), rank 1: exited with code 7");
  auto r1 = v1.get();
  REQUIRE(r1);
  CHECK(r1->describe() == v0->describe());
  CHECK(r1->exit_code == 7);
}

TEST_CASE("a launcher that stops beating is declared lost", "[agent][store]") {
  Store store;
  Agent a0(options(store.port(), 2, 0, 1));
  auto a1 = std::make_unique<Agent>(options(store.port(), 2, 1, 1));
  auto j1 = std::async(std::launch::async, [&] { return a1->join(); });
  a0.join();
  j1.get();
  a1.reset();  // never beats: like a SIGKILLed launcher
  std::promise<FailureRecord> lost;
  a0.start_monitor([&](int, const FailureRecord& f) { lost.set_value(f); });
  FailureRecord f = lost.get_future().get();
  CHECK(f.machine_rank == 1);
  CHECK_FALSE(f.restartable);
  CHECK_THAT(f.cause, Catch::Contains("no heartbeat for 2s"));
  auto verdict = a0.finish_round(0, std::nullopt);
  REQUIRE(verdict);
  CHECK(verdict->machine_rank == 1);
}

TEST_CASE("every machine finishing cleanly is a clean verdict, and rounds restart together",
          "[agent][store]") {
  Store store;
  Agent a0(options(store.port(), 2, 0, 1));
  Agent a1(options(store.port(), 2, 1, 1));
  auto j1 = std::async(std::launch::async, [&] { return a1.join(); });
  a0.join();
  j1.get();
  a0.start_monitor([](int, const FailureRecord&) {});
  a1.start_monitor([](int, const FailureRecord&) {});
  auto v1 = std::async(std::launch::async, [&] { return a1.finish_round(0, std::nullopt); });
  CHECK_FALSE(a0.finish_round(0, std::nullopt));
  CHECK_FALSE(v1.get());
  auto b1 = std::async(std::launch::async, [&] { a1.begin_round(1, [] {}); });
  bool cleared = false;
  a0.begin_round(1, [&] {
    store.server.clear();
    cleared = true;
  });
  b1.get();
  CHECK(cleared);
  auto w1 = std::async(std::launch::async, [&] { return a1.finish_round(1, std::nullopt); });
  CHECK_FALSE(a0.finish_round(1, std::nullopt));
  CHECK_FALSE(w1.get());
}
