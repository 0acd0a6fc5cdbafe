#include "cluster/agent.hpp"

#include <catch2/catch.hpp>

#include "cluster/record_codec.hpp"

using namespace xlaunch::cluster;
using namespace std::chrono_literals;

namespace {

JoinRecord record(int rank, int local, std::string settings = "s.max_restarts=0\n") {
  return JoinRecord{rank, "host" + std::to_string(rank), 100 + rank, local, "0.1.0", settings};
}

}  // namespace

TEST_CASE("records and layouts survive the store", "[agent]") {
  JoinRecord r = record(3, 2, agreed_settings({{"b", "2"}, {"a", "x\ny"}}));
  JoinRecord back = decode_join(encode(r), "k");
  CHECK(back.machine_rank == 3);
  CHECK(back.host == "host3");
  CHECK(back.pid == 103);
  CHECK(back.local_processes == 2);
  CHECK(back.settings == "s.a=x y\ns.b=2\n");
  FailureRecord f{1, "hostB", 3, 7, true, "exited with code 7"};
  FailureRecord fb = decode_failure(encode(f), "k");
  CHECK(fb.describe() == "machine 1 (hostB), rank 3: exited with code 7");
  CHECK(fb.restartable);
  FailureRecord lost{2, "hostC", -1, 1, false, "launcher lost"};
  CHECK(decode_failure(encode(lost), "k").describe() == "machine 2 (hostC): launcher lost");
  auto layout = std::get<Layout>(decode_layout(encode_layout(Layout{{2, 3, 1}, "exp-7", {}}), "k"));
  CHECK(layout.run_id == "exp-7");
  CHECK(layout.slots.empty());
  auto elastic = std::get<Layout>(decode_layout(encode_layout(Layout{{1, 1}, "r", {1, 4}}), "k"));
  CHECK(elastic.slots == std::vector<int>{1, 4});
  CHECK(elastic.local_processes == std::vector<int>{1, 1});
  CHECK(layout.world_size() == 6);
  CHECK(layout.rank_offset(0) == 0);
  CHECK(layout.rank_offset(2) == 5);
  auto problem = std::get<JoinProblem>(decode_layout(encode_layout(JoinProblem{1, "a\nb"}), "k"));
  CHECK(problem.exit_code == 1);
  CHECK(problem.message == "a\nb");
  CHECK_THROWS_AS(decode_join("machine=x", "k"), MalformedRecord);
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

TEST_CASE("an arrival slot taken and never written is named, not the machine after it", "[agent]") {
  // Machine 1 joined in slot 3, after slot 2 was taken by a client that wrote nothing.
  JoinProblem p = missing_machines({record(0, 1), record(1, 1)}, 2, 8s, {2});
  CHECK(p.exit_code == 1);
  CHECK_THAT(p.message, Catch::Contains("arrival slot 2 of the join was taken but never written") &&
                            Catch::Contains("joined: 0 (host0), 1 (host1))") &&
                            !Catch::Contains("missing"));
  JoinProblem two = missing_machines({record(0, 1)}, 3, 8s, {2, 4});
  CHECK_THAT(two.message, Catch::Contains("arrival slots 2, 4 of the join were taken") &&
                              Catch::Contains("; missing: 1, 2"));
}

TEST_CASE("a join report names at most 16 machines, each once", "[agent]") {
  std::vector<JoinRecord> many;
  for (int m = 0; m < 40; ++m) many.push_back(record(m % 20, 1));  // each rank twice
  JoinProblem p = missing_machines(many, 64, 8s, {41});
  CHECK_THAT(p.message, Catch::Contains("15 (host15), and 4 more; missing: 20, 21,") &&
                            Catch::Contains("35, and 28 more)"));
  CHECK(p.message.find("(host16)") == std::string::npos);
  CHECK(p.message.size() < 1024);
}

TEST_CASE("missing machines are listed with the ones that joined", "[agent]") {
  JoinProblem p = missing_machines({record(0, 1), record(2, 1)}, 4, 5s);
  CHECK(p.exit_code == 1);
  CHECK_THAT(p.message,
             Catch::Contains("machine ranks 1, 3 did not join within --rdzv_timeout 5s") &&
                 Catch::Contains("joined: 0 (host0), 2 (host2)"));
}
