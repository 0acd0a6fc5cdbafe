// StoreState without sockets: semantics of each request and of parked waiters.
#include "rendezvous/store_state.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <limits>
#include <string>

using namespace xlaunch::rendezvous;

namespace {

struct Harness {
  // Applies a request; returns the reply bytes. `ok` says whether the connection survives.
  std::string run(ConnId conn, Request r, bool* ok = nullptr, Dialect d = Dialect::D2) {
    std::string reply, error;
    fx = {};
    bool good = state.apply(conn, d, r, reply, fx, error);
    if (ok) *ok = good;
    last_error = error;
    return reply;
  }
  Request req(Op op, std::string_view key = {}, std::string_view value = {}) {
    Request r;
    r.op = op;
    r.key = key;
    r.value = value;
    return r;
  }
  Request wait(std::vector<std::string_view> keys) {
    Request r = req(Op::Wait);
    r.keys = std::move(keys);
    return r;
  }
  std::int64_t add(std::string_view key, std::int64_t delta, bool* ok = nullptr) {
    Request r = req(Op::Add, key);
    r.delta = delta;
    std::string out = run(1, r, ok);
    if (out.size() != 8) return -999;
    std::int64_t v;
    std::memcpy(&v, out.data(), 8);
    return v;
  }
  StoreState state;
  Effects fx;
  std::string last_error;
};

std::string fmt_key(ConnId conn, int k) {
  return "/fresh/" + std::to_string(conn) + "/" + std::to_string(k);
}

}  // namespace

TEST_CASE("parse_counter is strtoll-like", "[state]") {
  CHECK(parse_counter("12") == 12);
  CHECK(parse_counter("  -3") == -3);
  CHECK(parse_counter("+7xyz") == 7);
  CHECK(parse_counter("\t\n42 ") == 42);
  CHECK(parse_counter("-9223372036854775808") == std::numeric_limits<std::int64_t>::min());
  CHECK(parse_counter("9223372036854775807") == std::numeric_limits<std::int64_t>::max());
  CHECK_FALSE(parse_counter("9223372036854775808"));
  CHECK_FALSE(parse_counter("-9223372036854775809"));
  CHECK_FALSE(parse_counter(""));
  CHECK_FALSE(parse_counter("v1"));
  CHECK_FALSE(parse_counter("-"));
  CHECK_FALSE(parse_counter(" +"));
}

TEST_CASE("ADD: absent, present, junk, a stored value out of range", "[state]") {
  Harness h;
  CHECK(h.add("/c", 5) == 5);
  CHECK(h.add("/c", -7) == -2);
  CHECK(h.state.value("/c") == "-2");
  h.run(1, h.req(Op::Set, "/t", "12abc"));
  CHECK(h.add("/t", 1) == 13);
  h.run(1, h.req(Op::Set, "/v", "v1"));
  bool ok = true;
  h.add("/v", 1, &ok);
  CHECK_FALSE(ok);
  CHECK_THAT(h.last_error, Catch::Contains("/v") && Catch::Contains("not a 64-bit integer"));
  CHECK(h.state.value("/v") == "v1");
  h.run(1, h.req(Op::Set, "/huge", "9223372036854775808"));  // stored out of range
  h.add("/huge", 0, &ok);
  CHECK_FALSE(ok);
}

TEST_CASE("ADD wraps around past INT64_MAX and below INT64_MIN, like PyTorch's server", "[state]") {
  constexpr std::int64_t max = std::numeric_limits<std::int64_t>::max();
  constexpr std::int64_t min = std::numeric_limits<std::int64_t>::min();
  Harness h;
  bool ok = false;
  CHECK(h.add("/up", max) == max);
  CHECK(h.add("/up", 1, &ok) == min);
  CHECK(ok);
  CHECK(h.state.value("/up") == "-9223372036854775808");
  CHECK(h.add("/up", max, &ok) == -1);  // the wrapped value is parsed back as stored
  CHECK(ok);

  CHECK(h.add("/down", min + 1) == min + 1);
  CHECK(h.add("/down", -2, &ok) == max);
  CHECK(ok);
  CHECK(h.state.value("/down") == "9223372036854775807");
  CHECK(h.add("/down", min, &ok) == -1);
  CHECK(ok);
}

TEST_CASE("WAIT parks, counts missing keys, is woken by SET/ADD/APPEND/COMPARE_SET", "[state]") {
  Harness h;
  CHECK(h.run(7, h.wait({"/a", "/b"})).empty());
  CHECK(h.state.num_parked() == 1);
  h.run(1, h.req(Op::Set, "/a", "1"));
  CHECK(h.fx.woken.empty());
  h.run(1, h.req(Op::DeleteKey, "/a"));  // deletes do not count back up
  SECTION("SET") { h.run(1, h.req(Op::Set, "/b", "1")); }
  SECTION("ADD") { h.add("/b", 1); }
  SECTION("APPEND") { h.run(1, h.req(Op::Append, "/b", "x")); }
  SECTION("COMPARE_SET creating") {
    Request r = h.req(Op::CompareSet, "/b", "d");
    h.run(1, r);
  }
  SECTION("MULTI_SET") {
    Request r = h.req(Op::MultiSet);
    r.keys = {"/b"};
    r.values = {"v"};
    h.run(1, r);
  }
  REQUIRE(h.fx.woken == std::vector<ConnId>{7});
  CHECK(h.state.num_parked() == 0);
  h.run(1, h.req(Op::Set, "/b", "again"));
  CHECK(h.fx.woken.empty());  // released once
}

TEST_CASE("WAIT on present keys replies at once; empty list too", "[state]") {
  Harness h;
  h.run(1, h.req(Op::Set, "/a", ""));
  CHECK(h.run(2, h.wait({"/a"})) == std::string(1, '\0'));
  CHECK(h.run(2, h.wait({})) == std::string(1, '\0'));
  CHECK(h.state.num_parked() == 0);
}

TEST_CASE("CANCEL_WAIT, a replacing WAIT and disconnect drop the parked wait", "[state]") {
  Harness h;
  h.run(2, h.wait({"/x"}));
  SECTION("cancel") {
    CHECK(h.run(2, h.req(Op::CancelWait)) == std::string(1, '\1'));
    CHECK(h.run(2, h.req(Op::CancelWait)) == std::string(1, '\1'));  // always replies 01
  }
  SECTION("replaced by a new WAIT on another key") {
    h.run(2, h.wait({"/y"}));
    h.run(1, h.req(Op::Set, "/y", ""));
    CHECK(h.fx.woken == std::vector<ConnId>{2});
  }
  SECTION("disconnect") { h.state.disconnect(2); }
  h.run(1, h.req(Op::Set, "/x", ""));
  CHECK(h.fx.woken.empty());
  CHECK(h.state.num_parked() == 0);
}

TEST_CASE("a key listed twice must be set once and counts twice", "[state]") {
  Harness h;
  h.run(2, h.wait({"/d", "/d"}));
  h.run(1, h.req(Op::Set, "/d", ""));
  CHECK(h.fx.woken == std::vector<ConnId>{2});
}

TEST_CASE("many waiters on one key are all released by one SET", "[state]") {
  Harness h;
  for (ConnId c = 100; c < 20100; ++c) h.run(c, h.wait({"/go"}));
  CHECK(h.state.num_parked() == 20000);
  h.run(1, h.req(Op::Set, "/go", "1"));
  CHECK(h.fx.woken.size() == 20000);
  CHECK(h.state.num_parked() == 0);
}

TEST_CASE("re-WAITing on a never-set key does not grow without bound", "[state]") {
  Harness h;
  // 1.13 clients time out and WAIT again without cancelling: records are replaced.
  for (int i = 0; i < 100000; ++i) h.run(2, h.wait({"/never"}));
  CHECK(h.state.num_parked() == 1);
  h.run(1, h.req(Op::Set, "/never", ""));
  CHECK(h.fx.woken == std::vector<ConnId>{2});
}

TEST_CASE("COMPARE_SET semantics", "[state]") {
  Harness h;
  auto cas = [&](std::string_view key, std::string_view expected, std::string_view desired) {
    Request r = h.req(Op::CompareSet, key, desired);
    r.expected = expected;
    std::string out = h.run(1, r);
    return out.substr(8);
  };
  CHECK(cas("/k", "", "new") == "new");
  CHECK(cas("/k", "new", "x") == "x");
  CHECK(cas("/k", "bad", "y") == "x");
  CHECK(h.state.value("/k") == "x");
  CHECK(cas("/m", "abc", "d") == "abc");
  CHECK_FALSE(h.state.value("/m"));
  h.run(3, h.wait({"/k2"}));
  cas("/k2", "zz", "d");  // no change: no wake
  CHECK(h.fx.woken.empty());
}

TEST_CASE("GET of a missing key: legacy closes, 2.2+ replies empty", "[state]") {
  Harness h;
  bool ok = true;
  h.run(1, h.req(Op::Get, "/none"), &ok, Dialect::Legacy);
  CHECK_FALSE(ok);
  CHECK(h.run(1, h.req(Op::Get, "/none"), &ok, Dialect::D2) == std::string(8, '\0'));
  CHECK(ok);
}

TEST_CASE("queues: FIFO, length, one waiter per push, CHECK sees them", "[state]") {
  Harness h;
  h.run(5, h.wait({"/q"}));
  h.run(6, h.wait({"/q"}));
  h.run(1, h.req(Op::QueuePush, "/q", "a"));
  CHECK(h.fx.woken == std::vector<ConnId>{5});
  h.run(1, h.req(Op::QueuePush, "/q", "b"));
  CHECK(h.fx.woken == std::vector<ConnId>{6});
  std::string len = h.run(1, h.req(Op::QueueLen, "/q"));
  CHECK(len == std::string("\2\0\0\0\0\0\0\0", 8));
  std::string pop = h.run(1, h.req(Op::QueuePop, "/q"));
  CHECK(pop.substr(0, 8) == std::string("\2\0\0\0\0\0\0\0", 8));
  CHECK(pop.substr(16) == "a");
  CHECK(h.state.num_keys() == 0);
}

TEST_CASE("clear() empties everything and returns the parked connections", "[state]") {
  Harness h;
  h.run(1, h.req(Op::Set, "/a", "1"));
  h.run(1, h.req(Op::QueuePush, "/q", "1"));
  h.run(4, h.wait({"/never"}));
  h.run(9, h.wait({"/never2"}));
  std::vector<ConnId> parked = h.state.clear();
  std::sort(parked.begin(), parked.end());
  CHECK(parked == std::vector<ConnId>{4, 9});
  CHECK(h.state.num_keys() == 0);
  CHECK(h.state.num_parked() == 0);
  CHECK(h.run(1, h.req(Op::QueueLen, "/q")) == std::string(8, '\0'));
  h.run(1, h.req(Op::Set, "/never", ""));
  CHECK(h.fx.woken.empty());
}

TEST_CASE("clear(keep_prefix) keeps that prefix's keys, queues and waits only", "[state]") {
  Harness h;
  h.run(1, h.req(Op::Set, "xlaunch/job/layout", "L"));
  h.run(1, h.req(Op::Set, "/worker/0", "addr"));
  h.run(1, h.req(Op::QueuePush, "xlaunch/job/q", "1"));
  h.run(1, h.req(Op::QueuePush, "/wq", "1"));
  h.run(4, h.wait({"xlaunch/job/arrival/2"}));       // a launcher: stays parked
  h.run(5, h.wait({"/worker/1"}));                   // a worker: closed
  h.run(6, h.wait({"xlaunch/job/x", "/worker/2"}));  // both: closed (part of it goes)
  std::vector<ConnId> parked = h.state.clear("xlaunch/job/");
  std::sort(parked.begin(), parked.end());
  CHECK(parked == std::vector<ConnId>{5, 6});
  CHECK(h.state.num_keys() == 1);
  CHECK(h.run(1, h.req(Op::Get, "xlaunch/job/layout")).find('L') != std::string::npos);
  CHECK(h.run(1, h.req(Op::QueueLen, "/wq")) == std::string(8, '\0'));
  CHECK(h.run(1, h.req(Op::QueueLen, "xlaunch/job/q")) != std::string(8, '\0'));
  CHECK(h.state.num_parked() == 1);
  h.run(1, h.req(Op::Set, "xlaunch/job/arrival/2", "r"));
  CHECK(h.fx.woken.size() == 1);
  h.run(1, h.req(Op::Set, "xlaunch/job/x", "1"));
  h.run(1, h.req(Op::Set, "/worker/2", "1"));
  CHECK(h.fx.woken.empty());  // connection 6's wait is gone
}

TEST_CASE("waiting lists each parked connection with the keys it still misses", "[state]") {
  Harness h;
  CHECK(h.state.waiting().empty());
  h.run(1, h.req(Op::Set, "a", "1"));
  h.run(2, h.wait({"a", "b", "c"}));  // "a" exists: parks on b and c
  h.run(3, h.wait({"c"}));
  auto w = h.state.waiting();
  REQUIRE(w.size() == 2);
  CHECK(w[0].first == 2);
  CHECK(w[0].second == std::vector<std::string>{"b", "c"});
  CHECK(w[1].first == 3);
  CHECK(w[1].second == std::vector<std::string>{"c"});
  h.run(1, h.req(Op::Set, "b", "1"));  // conn 2 now misses only c
  w = h.state.waiting();
  REQUIRE(w.size() == 2);
  CHECK(w[0].second == std::vector<std::string>{"c"});
  h.run(1, h.req(Op::Set, "c", "1"));  // both woken
  CHECK(h.state.waiting().empty());
  h.run(4, h.wait({"d"}));
  h.state.disconnect(4);
  CHECK(h.state.waiting().empty());
}

TEST_CASE("APPEND cannot grow a value past max_value_bytes", "[state]") {
  Harness h;
  h.state = StoreState(StateLimits{10, 1000});
  bool ok = false;
  h.run(1, h.req(Op::Append, "k", "123456"), &ok);
  CHECK(ok);
  h.run(1, h.req(Op::Append, "k", "7890"), &ok);
  CHECK(ok);  // exactly 10
  h.run(1, h.req(Op::Append, "k", "x"), &ok);
  CHECK_FALSE(ok);
  CHECK(h.last_error.find("over the store's limit of 10") != std::string::npos);
  CHECK(h.state.value("k") == "1234567890");
}

TEST_CASE("a MULTI_GET or LIST whose reply would pass max_reply_bytes closes, building nothing",
          "[state]") {
  Harness h;
  h.state = StoreState(StateLimits{1000, 100});
  h.run(1, h.req(Op::Set, "big", std::string(40, 'v')));
  Request get = h.req(Op::MultiGet);
  get.keys = {"big", "big"};  // 2 * (8 + 40) = 96 bytes: fits
  bool ok = false;
  CHECK(h.run(1, get, &ok).size() == 96);
  CHECK(ok);
  get.keys = {"big", "big", "big"};  // 144 bytes
  CHECK(h.run(1, get, &ok).empty());
  CHECK_FALSE(ok);
  CHECK(h.last_error.find("MULTI_GET") != std::string::npos);
  for (int i = 0; i < 20; ++i) h.run(1, h.req(Op::Set, "key" + std::to_string(i), "1"));
  CHECK(h.run(1, h.req(Op::List), &ok).empty());  // 8 + 21 keys * 12+ bytes
  CHECK_FALSE(ok);
  CHECK(h.last_error.find("LIST") != std::string::npos);
}

TEST_CASE("waits replaced or closed leave no unbounded entries behind", "[state]") {
  Harness h;
  // Each round: a client waits on 100 keys nobody ever sets, then goes (or re-waits).
  for (ConnId conn = 10; conn < 1010; ++conn) {
    std::vector<std::string> names;
    for (int k = 0; k < 100; ++k) names.push_back(fmt_key(conn, k));
    std::vector<std::string_view> keys(names.begin(), names.end());
    h.run(conn, h.wait(keys));
    if (conn % 2 == 0) {
      h.state.disconnect(conn);
    } else {
      h.run(conn, h.wait({"/never"}));  // a 1.13 client re-waiting after its timeout
      h.state.disconnect(conn);
    }
    // Live entries: none once disconnected; stale ones stay within the sweep's bound.
    CHECK(h.state.num_parked_entries() <= 1024 + 100);
  }
  CHECK(h.state.num_parked() == 0);
  // A live wait survives sweeps and is still woken.
  h.run(2, h.wait({"/late"}));
  for (ConnId conn = 2000; conn < 2100; ++conn) {
    std::string name = fmt_key(conn, 0);
    h.run(conn, h.wait({name}));
    h.state.disconnect(conn);
  }
  h.run(1, h.req(Op::Set, "/late", "1"));
  REQUIRE(h.fx.woken.size() == 1);
  CHECK(h.fx.woken[0] == 2);
}

TEST_CASE("waiting reports at most a few keys per connection", "[state]") {
  Harness h;
  std::vector<std::string> names;
  for (int k = 0; k < 1000; ++k) names.push_back(fmt_key(7, k));
  h.run(7, h.wait(std::vector<std::string_view>(names.begin(), names.end())));
  auto w = h.state.waiting();
  REQUIRE(w.size() == 1);
  CHECK(w[0].second.size() == kMaxWaitingKeysReported);
}

TEST_CASE("max_stored_bytes bounds what the store holds; a request past it changes nothing",
          "[state]") {
  Harness h;
  // Each key costs its bytes, its value's and kEntryOverhead.
  const std::size_t one = 1 + 10 + kEntryOverhead;
  h.state = StoreState(StateLimits{1000, 100000, 3 * one});
  bool ok = false;
  for (const char* key : {"a", "b", "c"}) {
    h.run(1, h.req(Op::Set, key, std::string(10, 'v')), &ok);
    CHECK(ok);
  }
  CHECK(h.state.stored_bytes() == 3 * one);
  h.run(1, h.req(Op::Set, "d", "1"), &ok);
  CHECK_FALSE(ok);
  CHECK(h.last_error.find("SET of key \"d\"") != std::string::npos);
  CHECK(h.last_error.find("max_stored_bytes") != std::string::npos);
  CHECK_FALSE(h.state.value("d"));
  h.run(1, h.req(Op::Set, "a", std::string(11, 'v')), &ok);  // one byte more
  CHECK_FALSE(ok);
  CHECK(h.state.value("a") == std::string(10, 'v'));
  h.run(1, h.req(Op::Set, "a", "short"), &ok);  // an overwrite that frees
  CHECK(ok);
  CHECK(h.state.stored_bytes() == 3 * one - 5);
  h.run(1, h.req(Op::Append, "a", "12345"), &ok);
  CHECK(ok);
  h.run(1, h.req(Op::Append, "a", "x"), &ok);
  CHECK_FALSE(ok);
  CHECK(h.add("b", 1, &ok) == -999);  // "vvvv..." is no counter: refused for that first
  h.run(1, h.req(Op::DeleteKey, "c"), &ok);
  CHECK(h.state.stored_bytes() == 2 * one);
  CHECK(h.add("n", 7, &ok) == 7);  // 1 + 1 + 64
  CHECK(ok);

  Request cas = h.req(Op::CompareSet, "m", std::string(50, 'v'));
  h.run(1, cas, &ok);  // expected "" and no key: would set 1 + 50 + 64
  CHECK_FALSE(ok);
  CHECK(h.last_error.find("COMPARE_SET") != std::string::npos);
  CHECK_FALSE(h.state.value("m"));

  Request multi = h.req(Op::MultiSet);
  multi.keys = {"x", "y"};
  multi.values = {"1", std::string(40, 'v')};
  h.run(1, multi, &ok);  // the first alone would fit: neither is set
  CHECK_FALSE(ok);
  CHECK_FALSE(h.state.value("x"));
  multi.keys = {"a", "a"};
  multi.values = {std::string(500, 'v'), "ok"};  // the same key twice: the last value counts
  h.run(1, multi, &ok);
  CHECK(ok);
  CHECK(h.state.value("a") == "ok");
}

TEST_CASE("queued items count toward max_stored_bytes until they are popped", "[state]") {
  Harness h;
  h.state = StoreState(StateLimits{1000, 100000, 400});
  bool ok = false;
  h.run(1, h.req(Op::QueuePush, "q", std::string(100, 'v')), &ok);  // 1 + 64 + 100 + 64
  CHECK(ok);
  CHECK(h.state.stored_bytes() == 229);
  h.run(1, h.req(Op::QueuePush, "q", std::string(100, 'v')), &ok);  // 164 more: 393
  CHECK(ok);
  h.run(1, h.req(Op::QueuePush, "q", "x"), &ok);
  CHECK_FALSE(ok);
  CHECK(h.last_error.find("QUEUE_PUSH") != std::string::npos);
  h.run(1, h.req(Op::QueuePop, "q"));
  h.run(1, h.req(Op::QueuePop, "q"));
  CHECK(h.state.stored_bytes() == 0);
  h.run(1, h.req(Op::Set, "kept/a", "1"));
  h.run(1, h.req(Op::Set, "gone", "1"));
  h.state.clear("kept/");
  CHECK(h.state.stored_bytes() == 6 + 1 + kEntryOverhead);
}

TEST_CASE("the keys a parked WAIT names count toward max_stored_bytes until it ends", "[state]") {
  Harness h;
  h.state = StoreState(StateLimits{1000, 100000, 400});
  bool ok = false;
  h.run(2, h.wait({"k1", "k2"}), &ok);  // 2 * (2 + 64) = 132
  CHECK(ok);
  CHECK(h.state.stored_bytes() == 132);
  h.run(3, h.wait({"k1", "k3"}), &ok);  // 132 more: 264
  CHECK(ok);
  const std::string long_key(80, 'k');
  h.run(4, h.wait({long_key}), &ok);  // 144 more: past 400
  CHECK_FALSE(ok);
  CHECK(h.last_error.find("WAIT of key \"kkk") != std::string::npos);
  h.run(1, h.req(Op::Set, "k1", "v"));  // wakes one entry of each wait, stores 2 + 1 + 64
  CHECK(h.state.stored_bytes() == 132 + 67);
  h.state.disconnect(2);
  CHECK(h.state.stored_bytes() == 66 + 67);
  h.run(3, h.wait({"k1"}), &ok);  // replaces its wait; k1 exists: nothing parked
  CHECK(ok);
  CHECK(h.state.stored_bytes() == 67);
}

TEST_CASE("watched keys count toward max_stored_bytes until their connection closes", "[state]") {
  Harness h;
  h.state = StoreState(StateLimits{1000, 100000, 200});
  bool ok = false;
  h.run(2, h.req(Op::WatchKey, "k1"), &ok, Dialect::D0);  // 2 * 2 + 64 = 68
  CHECK(ok);
  h.run(2, h.req(Op::WatchKey, "k1"), &ok, Dialect::D0);  // the same watch: nothing more
  CHECK(h.state.stored_bytes() == 68);
  h.run(3, h.req(Op::WatchKey, "k1"), &ok, Dialect::D0);
  CHECK(h.state.stored_bytes() == 136);
  h.run(3, h.req(Op::WatchKey, "k2"), &ok, Dialect::D0);  // past 200
  CHECK_FALSE(ok);
  CHECK(h.last_error.find("WATCH_KEY of key \"k2\"") != std::string::npos);
  h.state.clear();
  CHECK(h.state.stored_bytes() == 136);  // watches outlive a clear
  h.state.disconnect(2);
  h.state.disconnect(3);
  CHECK(h.state.stored_bytes() == 0);
}
