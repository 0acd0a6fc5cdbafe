#include "cluster/record_codec.hpp"

#include <fmt/format.h>

#include <catch2/catch.hpp>

using namespace xlaunch::cluster;

namespace {

std::string join_text(std::string_view machine, std::string_view local) {
  return fmt::format("machine={}\nhost=hostB\npid=42\nlocal={}\nversion=0.1.0\ns.a=1\n", machine,
                     local);
}

// The text of the MalformedRecord that decoding `text` throws.
template <class Decode>
std::string refusal(Decode decode) {
  try {
    decode();
  } catch (const MalformedRecord& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("a join record's ranks and counts are checked and the key named", "[record]") {
  const JoinRecord ok = decode_join(join_text("3", "2"), "k");
  CHECK(ok.machine_rank == 3);
  CHECK(ok.local_processes == 2);
  CHECK(ok.settings == "s.a=1\n");
  CHECK(refusal([] { decode_join(join_text("100000000", "1"), "xlaunch/j/arrival/2"); }) ==
        "malformed record xlaunch/j/arrival/2: machine=100000000 is outside -1..65535");
  CHECK(refusal([] { decode_join(join_text("-2", "1"), "k"); }) ==
        "malformed record k: machine=-2 is outside -1..65535");
  CHECK_THAT(refusal([] { decode_join(join_text("1", "-5"), "k"); }),
             Catch::StartsWith("malformed record k: local=-5 is outside 1.."));
  CHECK_THAT(refusal([] { decode_join(join_text("1", "2147483647"), "k"); }),
             Catch::StartsWith("malformed record k: local=2147483647 is outside 1.."));
  CHECK(refusal([] { decode_join(join_text("1", "99999999999999999999"), "k"); }) ==
        "malformed record k: local='99999999999999999999' is not a number");
  CHECK(refusal([] { decode_join(join_text("1 ", "1"), "k"); }) ==
        "malformed record k: machine='1 ' is not a number");
  CHECK(refusal([] {
          decode_join("machine=1\nhost=a\x1b[2J\npid=1\nlocal=1\nversion=v\n", "k");
        }) == "malformed record k: host holds control characters");
  CHECK(refusal([] { decode_join(join_text("1", "1") + "evil=1\n", "k"); }) ==
        "malformed record k: unknown line 'evil'");
  CHECK(refusal([] { decode_join(join_text("1", "1") + "machine=2\n", "k"); }) ==
        "malformed record k: 'machine' given twice");
  CHECK(refusal([] { decode_join("host=a\npid=1\nlocal=1\nversion=v\n", "k"); }) ==
        "malformed record k: no 'machine'");
}

TEST_CASE("a layout's counts, sums, run id and slots are checked", "[record]") {
  const auto ok = std::get<Layout>(decode_layout("ok\n2,3\nrun-1\n1,4", "k"));
  CHECK(ok.world_size() == 5);
  CHECK(ok.slots == std::vector<int>{1, 4});
  CHECK_THAT(refusal([] { decode_layout("ok\n-5,1\nrun-1\n", "k"); }),
             Catch::Contains("local counts=-5 is outside 1.."));
  CHECK_THAT(refusal([] { decode_layout("ok\n2147483647,1\nrun-1\n", "k"); }),
             Catch::Contains("is outside 1.."));
  CHECK_THAT(refusal([] { decode_layout("ok\n1\n../../etc\n", "k"); }),
             Catch::Contains("is not a run id"));
  CHECK_THAT(refusal([] { decode_layout("ok\n1,1\nr\n3,3", "k"); }),
             Catch::Contains("an arrival slot given twice"));
  CHECK_THAT(refusal([] { decode_layout("ok\n1,1\nr\n3", "k"); }),
             Catch::Contains("a different number of arrival slots and machines"));
  CHECK_THAT(refusal([] { decode_layout("ok\n\nr\n", "k"); }), Catch::Contains("no machines"));
  CHECK_THAT(refusal([] { decode_layout("maybe", "k"); }), Catch::Contains("neither 'ok' nor"));
  CHECK_THAT(refusal([] { decode_layout("error\n0\nwhy", "k"); }),
             Catch::Contains("exit code=0 is outside 1..255"));
  const auto problem = std::get<JoinProblem>(decode_layout("error\n2\ntwo\nlines", "k"));
  CHECK(problem.exit_code == 2);
  CHECK(problem.message == "two\nlines");
  // A layout that does not fit the job (a fixed job of 2, an elastic one of at most 2).
  CHECK_THROWS_AS(check_fixed_layout(ok, 3, "k"), MalformedRecord);
  CHECK_NOTHROW(check_fixed_layout(Layout{{1, 1}, "r", {}}, 2, "k"));
  CHECK_NOTHROW(check_elastic_layout(ok, 2, "k"));
  CHECK_THROWS_AS(check_elastic_layout(ok, 1, "k"), MalformedRecord);
  CHECK_THROWS_AS(check_elastic_layout(Layout{{1, 1}, "r", {}}, 2, "k"), MalformedRecord);
}

TEST_CASE("the records a fixed job formed from must match its layout", "[record]") {
  const Layout layout{{2, 1}, "r", {}};
  std::vector<JoinRecord> records{{1, "b", 2, 1, "v", ""}, {0, "a", 1, 2, "v", ""}};
  CHECK(hosts_by_rank(layout, records, {"k1", "k2"}) == std::vector<std::string>{"a", "b"});
  records[0] = {0, "b", 2, 2, "v", ""};  // rank 0 twice
  CHECK_THAT(refusal([&] {
               hosts_by_rank(layout, records, {"k1", "k2"});
             }),
             Catch::StartsWith("malformed record k2: machine rank 0 does not fit"));
  records[0].machine_rank = 1;
  records[0].local_processes = 5;  // not what the layout says
  CHECK(refusal([&] {
          hosts_by_rank(layout, records, {"k1", "k2"});
        }) == "malformed record k1: local count 5, but the layout gives machine 1 1");
}

TEST_CASE("failure records, verdicts, counters and messages are checked", "[record]") {
  const FailureRecord f{1, "hostB", 3, 7, true, "exited with code 7"};
  CHECK(decode_failure(encode(f), "k").describe() == f.describe());
  CHECK(decode_verdict("ok", "k") == std::nullopt);
  std::string bad = encode(f);
  bad.replace(bad.find("exit_code=7"), 11, "exit_code=300");
  CHECK_THAT(refusal([&] { decode_failure(bad, "v"); }),
             Catch::Contains("exit_code=300 is outside 0..255"));
  CHECK_THAT(refusal([] { decode_verdict("neither", "v"); }),
             Catch::Contains("malformed record v"));
  // A malformed failure stops the round with the same words everywhere, blaming no machine.
  const FailureRecord stop = failure_at("garbage", "xlaunch/j/round/0/failure", "j");
  CHECK(stop.exit_code == 1);
  CHECK_FALSE(stop.restartable);
  CHECK(stop.describe() ==
        "malformed record xlaunch/j/round/0/failure: a line that is not NAME=VALUE: 'garbage'; "
        "is another program using run id 'j'?");
  CHECK(decode_count("12", 0, 20, "k") == 12);
  CHECK_THROWS_AS(decode_count("x", 0, 20, "k"), MalformedRecord);
  CHECK_THROWS_AS(decode_count("21", 0, 20, "k"), MalformedRecord);
  CHECK_THROWS_AS(decode_name(std::string(300, 'a'), "k"), MalformedRecord);
  CHECK(decode_message("two\nlines", "k") == "two\nlines");
  CHECK_THROWS_AS(decode_message("bell\a", "k"), MalformedRecord);
  CHECK(flat("a\nb\x1b") == "a b ");
}
