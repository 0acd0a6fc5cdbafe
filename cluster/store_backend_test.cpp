#include "cluster/store_backend.hpp"

#include <catch2/catch.hpp>
#include <future>
#include <thread>

#include "cluster/membership.hpp"
#include "rendezvous/store_server.hpp"

using namespace xlaunch::cluster;
using namespace std::chrono_literals;

namespace {

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

TEST_CASE("three launchers join one store and agree on the layout", "[agent][store]") {
  Store store;
  std::vector<std::future<Membership>> joins;
  std::vector<std::unique_ptr<StoreBackend>> agents;
  const int locals[] = {2, 1, 3};
  for (int m = 2; m >= 0; --m) {  // machine 0 last: the others wait for its store's answer
    agents.push_back(std::make_unique<StoreBackend>(options(store.port(), 3, m, locals[m])));
  }
  for (auto& agent : agents)
    joins.push_back(std::async(std::launch::async, [&] { return agent->join(); }));
  for (auto& join : joins) {
    Layout layout = join.get().layout;
    CHECK(layout.local_processes == std::vector<int>{2, 1, 3});
    CHECK(layout.run_id == "run-of-machine-0");  // one job, one run id
  }
}

TEST_CASE("a machine that never comes is named on every launcher", "[agent][store]") {
  Store store;
  auto make = [&](int m) {
    AgentOptions o = options(store.port(), 3, m, 1);
    o.rdzv_timeout = 300ms;
    return std::make_unique<StoreBackend>(o);
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
  StoreBackend a0(options(store.port(), 2, 0, 1));
  StoreBackend a1(options(store.port(), 2, 1, 1));
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
  StoreBackend a0(options(store.port(), 2, 0, 1));
  auto a1 = std::make_unique<StoreBackend>(options(store.port(), 2, 1, 1));
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
  StoreBackend a0(options(store.port(), 2, 0, 1));
  StoreBackend a1(options(store.port(), 2, 1, 1));
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

namespace {

AgentOptions elastic(std::uint16_t port, int rank, int min, int max) {
  AgentOptions o = options(port, max, rank, 1);
  o.min_machines = min;
  o.max_machines = max;
  o.max_restarts = 1;
  o.last_call_timeout = 200ms;
  return o;
}

}  // namespace

TEST_CASE("an elastic job grows by a newcomer: a restartable change, then a round with it",
          "[agent][store][elastic]") {
  Store store;
  StoreBackend host(elastic(store.port(), 0, 1, 2));
  Membership first = host.join();  // alone, after the last call
  CHECK(first.num_machines() == 1);
  CHECK(first.round == 0);
  std::promise<FailureRecord> change;
  host.start_monitor([&](int round, const FailureRecord& f) {
    CHECK(round == 0);
    change.set_value(f);
  });
  StoreBackend late(elastic(store.port(), -1, 1, 2));
  auto joining = std::async(std::launch::async, [&] { return late.join(); });
  FailureRecord f = change.get_future().get();
  CHECK(is_membership_change(f));
  CHECK_THAT(f.cause, Catch::Contains("joined the job (pid 99)"));
  REQUIRE(host.finish_round(0, std::nullopt));
  // The workers' keys go before the round is published (PyTorch 2.x expects an empty store
  // each round); the launchers' records stay (the caller clears with their prefix kept).
  int clears = 0;
  Membership next = host.begin_round(1, [&] { ++clears; });
  CHECK(clears == 1);
  CHECK(next.num_machines() == 2);
  CHECK(next.machine_rank == 0);
  Membership theirs = joining.get();
  CHECK(theirs.round == 1);
  CHECK(theirs.machine_rank == 1);
  CHECK(theirs.layout.run_id == "run-of-machine-0");
  CHECK(theirs.layout.world_size() == 2);
}

TEST_CASE("an elastic newcomer that disagrees is refused without stopping the job",
          "[agent][store][elastic]") {
  Store store;
  StoreBackend host(elastic(store.port(), 0, 1, 2));
  host.join();
  bool stopped = false;
  host.start_monitor([&](int, const FailureRecord&) { stopped = true; });
  AgentOptions odd = elastic(store.port(), -1, 1, 2);
  odd.settings = agreed_settings({{"max_restarts", "5"}});
  StoreBackend late(odd);
  try {
    late.join();
    FAIL("a launcher with other settings was taken in");
  } catch (const AgentError& e) {
    CHECK(e.exit_code() == 2);
    CHECK_THAT(e.what(), Catch::Contains("refused") && Catch::Contains("max_restarts"));
  }
  host.stop_monitor();
  CHECK_FALSE(stopped);
}

TEST_CASE("a launcher waiting on a full elastic job hears that it ended",
          "[agent][store][elastic]") {
  Store store;
  StoreBackend host(elastic(store.port(), 0, 1, 2));
  StoreBackend second(elastic(store.port(), -1, 1, 2));
  auto j2 = std::async(std::launch::async, [&] { return second.join(); });
  CHECK(host.join().num_machines() == 2);  // MAX: no last call
  CHECK(j2.get().machine_rank == 1);
  StoreBackend third(elastic(store.port(), -1, 1, 2));
  auto j3 = std::async(std::launch::async, [&] { return third.join(); });
  host.start_monitor([](int, const FailureRecord&) { FAIL("a full job re-formed"); });
  second.start_monitor([](int, const FailureRecord&) {});
  auto v2 = std::async(std::launch::async, [&] { return second.finish_round(0, std::nullopt); });
  CHECK_FALSE(host.finish_round(0, std::nullopt));
  CHECK_FALSE(v2.get());
  host.stop_monitor();
  host.close(0);
  CHECK_THROWS_WITH(j3.get(), Catch::Contains("the job ended (exit code 0) before this machine "
                                              "was taken in"));
}
