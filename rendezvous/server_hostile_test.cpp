// Misbehaving clients of the store server: half requests, malformed frames, limits
// (connections, buffered bytes), bursts, and clients that never read; each stays their own
// problem.
#include <chrono>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rendezvous/server_test_util.hpp"

using namespace xlaunch::rendezvous;
using namespace xlaunch::rendezvous::testing;
using namespace std::chrono_literals;

TEST_CASE("a client that disconnects mid-request does not disturb others", "[server]") {
  Fixture f;
  StoreClient c = f.client();
  {
    Raw raw(f.server.port());
    std::string set = req(Dialect::D0, Op::Set, "/half", "value");
    raw.send(set.substr(0, set.size() - 2));
  }  // closed with half a request buffered
  {
    Raw raw(f.server.port());
    raw.send(std::string(1, '\x05'));  // a WAIT command byte, then gone
  }
  c.set("/ok", "1");
  CHECK(c.get("/ok") == "1");
  CHECK(c.check({"/half"}) == false);
}

TEST_CASE("a malformed frame closes only that connection", "[server]") {
  Fixture f;
  StoreClient c = f.client();
  c.set("/keep", "1");
  SECTION("unknown command") {
    Raw raw(f.server.port());
    raw.send(std::string(1, '\x0d'));
    CHECK(raw.closed_by_server());
  }
  SECTION("absurd key length") {
    Raw raw(f.server.port());
    raw.send(std::string(1, '\x02') + i64_bytes(-1));
    CHECK(raw.closed_by_server());
  }
  SECTION("wrong handshake magic") {
    Raw raw(f.server.port());
    raw.send(std::string("\x00\xDE\xAD\xBE\xEF\x00\x00\x00\x00", 9));
    CHECK(raw.closed_by_server());
  }
  SECTION("ADD onto a non-integer") {
    c.set("/text", "v1");
    Raw raw(f.server.port());
    raw.send(add_req(Dialect::D0, "/text", 1));
    CHECK(raw.closed_by_server());
  }
  SECTION("GET of a missing key on a legacy connection") {
    Raw raw(f.server.port());
    raw.send(req(Dialect::D0, Op::Get, "/absent"));
    CHECK(raw.closed_by_server());
  }
  SECTION("a second VALIDATE") {
    Raw raw(f.server.port());
    raw.send(validate_req() + validate_req());
    CHECK(raw.closed_by_server());
  }
  CHECK(c.get("/keep") == "1");
  CHECK(c.add("/n", 2) == 2);
}

TEST_CASE("an ADD past INT64_MAX wraps around and keeps the connection", "[server]") {
  constexpr std::int64_t max = std::numeric_limits<std::int64_t>::max();
  Fixture f;
  Raw raw(f.server.port());
  raw.send(add_req(Dialect::D0, "/wrap", max) + add_req(Dialect::D0, "/wrap", 1));
  CHECK(raw.recv(8) == i64_bytes(max));
  CHECK(raw.recv(8) == i64_bytes(std::numeric_limits<std::int64_t>::min()));
  raw.send(add_req(Dialect::D0, "/wrap", -1));
  CHECK(raw.recv(8) == i64_bytes(max));
}

TEST_CASE("max_connections refuses the connection over the limit", "[server]") {
  ServerOptions o;
  o.limits.max_connections = 2;
  Fixture f(o);
  StoreClient a = f.client();
  StoreClient b = f.client();
  Raw extra(f.server.port());
  CHECK(extra.closed_by_server());
  a.set("/a", "1");
  CHECK(b.get("/a") == "1");
}
TEST_CASE("past max_buffered_bytes the connection buffering the most is closed, only it",
          "[server]") {
  constexpr std::size_t KiB = 1024;
  ServerOptions o;
  o.limits.max_buffered_bytes = 1024 * KiB;
  Fixture f(o);
  StoreClient c = f.client();
  // Each raw connection sends a SET of a 500 KiB value, stopping `sent` bytes in.
  struct Partial {
    std::string key, request;
    std::size_t sent;
    std::unique_ptr<Raw> raw;
  };
  const std::string value(500 * KiB, 'v');
  auto start = [&](std::string key, std::size_t value_bytes_sent) {
    Partial p{key, req(Dialect::D0, Op::Set, key, value), 0,
              std::make_unique<Raw>(f.server.port())};
    p.sent = p.request.size() - value.size() + value_bytes_sent;
    p.raw->send(p.request.substr(0, p.sent));
    return p;
  };
  Partial big = start("/big", 450 * KiB);
  Partial mid = start("/mid", 300 * KiB);
  Partial small = start("/small", 100 * KiB);
  const std::size_t under_cap = big.sent + mid.sent + small.sent;
  wait_until([&] { return f.server.buffered_bytes() == under_cap; });
  CHECK(f.server.num_connections() == 4);

  // The newcomer pushes the total past the cap, and the biggest buffer goes, not the newcomer.
  Partial late = start("/late", 200 * KiB);
  REQUIRE(big.raw->closed_by_server());
  wait_until([&] { return f.server.buffered_bytes() == mid.sent + small.sent + late.sent; });
  CHECK(f.server.num_connections() == 4);

  // The others finish their requests, one at a time so that the total stays under the cap,
  // and are served; so is everyone else.
  for (Partial* p : {&mid, &small, &late}) {
    p->raw->send(p->request.substr(p->sent));
    CHECK(c.get(p->key) == value);
  }
  CHECK_FALSE(c.check({"/big"}));
  CHECK(f.server.buffered_bytes() == 0);

  // Accounting forgets the connections that close with a request half sent.
  Partial gone1 = start("/gone1", 10 * KiB);
  Partial gone2 = start("/gone2", 20 * KiB);
  wait_until([&] { return f.server.buffered_bytes() == gone1.sent + gone2.sent; });
  gone1.raw.reset();
  gone2.raw.reset();
  mid.raw.reset();
  wait_until([&] { return f.server.num_connections() == 3; });  // c, small, late
  CHECK(f.server.buffered_bytes() == 0);
}

TEST_CASE("a request larger than max_buffered_bytes is refused from its declared length",
          "[server]") {
  ServerOptions o;
  o.limits.max_buffered_bytes = 1024 * 1024;  // max_request_bytes stays at its larger default
  Fixture f(o);
  Raw raw(f.server.port());
  std::string set = req(Dialect::D0, Op::Set, "/huge", std::string(2 * 1024 * 1024, 'h'));
  raw.send(set.substr(0, 64));  // the header declares 2 MiB; almost none of it is sent
  CHECK(raw.closed_by_server());
  CHECK(f.server.buffered_bytes() == 0);
}

TEST_CASE("a client trickling a huge MULTI_GET key by key does not hold up the others",
          "[server]") {
  // At max_keys_per_request, one key per write: each arrival is read on the store's one
  // thread, which must go on from where the request stopped, not read it all again.
  constexpr std::size_t kKeys = 131072;
  Fixture f;
  StoreClient other = f.client();
  std::vector<std::string> keys, values;
  Request mset, mget;
  mset.op = Op::MultiSet;
  mget.op = Op::MultiGet;
  for (std::size_t i = 0; i < kKeys; ++i) {
    keys.push_back("/t/" + std::to_string(i));
    values.push_back("v" + std::to_string(i * 7));
  }
  for (std::size_t i = 0; i < kKeys; ++i) {
    mset.keys.emplace_back(keys[i]);
    mset.values.emplace_back(values[i]);
    mget.keys.emplace_back(keys[i]);
  }
  std::string setup = validate_req(), wire;
  encode_request(setup, Dialect::D2, mset);
  encode_request(wire, Dialect::D2, mget);
  Raw raw(f.server.port());
  raw.send(setup);
  REQUIRE(other.get(keys.back()) == values.back());  // MULTI_SET has no reply: wait for it

  std::size_t pos = 9;  // command byte and count first, then one key per write
  raw.send(wire.substr(0, pos));
  std::int64_t expected = 0;
  for (std::size_t i = 0; i < kKeys; ++i) {
    const std::size_t len = 8 + keys[i].size();
    raw.send(wire.substr(pos, len));
    pos += len;
    if (i % 4096 == 0) REQUIRE(other.add("/other", 1) == ++expected);  // answered meanwhile
  }
  REQUIRE(pos == wire.size());
  CHECK(other.add("/other", 1) == ++expected);
  for (std::size_t i = 0; i < kKeys; ++i) {
    std::string len = raw.recv(8);
    REQUIRE(load_u64(reinterpret_cast<const std::uint8_t*>(len.data())) == values[i].size());
    REQUIRE(raw.recv(values[i].size()) == values[i]);
  }
  CHECK(f.server.buffered_bytes() == 0);
}

TEST_CASE("a burst far larger than one read is fully processed with no further traffic",
          "[server]") {
  Fixture f;
  Raw raw(f.server.port());
  std::string burst;
  const std::string value(1000, 'v');
  for (int i = 0; i < 2000; ++i) {
    Request r;
    r.op = Op::Set;
    std::string key = "/burst/" + std::to_string(i);
    r.key = key;
    r.value = value;
    encode_request(burst, Dialect::D0, r);
  }
  burst += std::string(1, '\x06');  // GETNUMKEYS: answered only once every SET was read
  raw.send(burst);
  CHECK(raw.recv(8) == i64_bytes(2000));
}

TEST_CASE("a client that does not read its replies stalls only itself", "[server]") {
  Fixture f;
  StoreClient c = f.client();
  const std::string big(1 << 20, 'b');
  c.set("/big", big);
  REQUIRE(c.get("/big") == big);  // SET has no reply: make sure it is in before the hog asks
  Raw hog(f.server.port());
  std::string gets;
  // 48 MiB of replies: far more than the socket buffers and the server's 16 MiB of queued
  // output, so the server stops reading from this client until it reads.
  for (int i = 0; i < 48; ++i) gets += req(Dialect::D0, Op::Get, "/big");
  hog.send(gets);
  for (int i = 1; i <= 200; ++i) REQUIRE(c.add("/others", 1) == i);
  hog.send(
      add_req(Dialect::D0, "/hog", 7));  // read by the server only once the hog has drained enough
  for (int i = 0; i < 48; ++i) {
    REQUIRE(hog.recv(8) == i64_bytes(1 << 20));
    REQUIRE(hog.recv(big.size()) == big);
  }
  CHECK(hog.recv(8) == i64_bytes(7));
  CHECK(c.get("/hog") == "7");
}

namespace {

// Reads whatever the server sent until it closes the connection; false after 10 s without.
bool drained_then_closed(Raw& raw) {
  std::string chunk(64 * 1024, '\0');
  for (;;) {
    IoStatus st = raw.sock.recv_exact(chunk.data(), chunk.size(), Clock::now() + 10s);
    if (st.code == IoStatus::Eof || st.code == IoStatus::Error) return true;
    if (!st.ok()) return false;
  }
}

}  // namespace

TEST_CASE("one request whose reply would be huge closes only its connection", "[server]") {
  ServerOptions o;
  o.limits.max_value_bytes = 64 * 1024;
  o.limits.max_buffered_bytes = 1024 * 1024;  // so one reply may be at most 1 MiB
  Fixture f(o);
  StoreClient c = f.client();
  c.set("/v", std::string(64 * 1024, 'v'));
  REQUIRE(c.get("/v").size() == 64 * 1024);
  Raw raw(f.server.port());
  Request r;
  r.op = Op::MultiGet;
  r.keys = std::vector<std::string_view>(100, "/v");  // 6.4 MiB of reply from 400 bytes
  std::string bytes = validate_req();
  encode_request(bytes, Dialect::D2, r);
  raw.send(bytes);
  CHECK(raw.closed_by_server());
  CHECK(f.server.unsent_bytes() == 0);
  CHECK(c.add("/n", 1) == 1);
}

TEST_CASE("a client that pipelines requests and never reads holds a bounded backlog", "[server]") {
  Fixture f;
  StoreClient c = f.client();
  const std::string big(1 << 20, 'b');
  c.set("/big", big);
  REQUIRE(c.get("/big") == big);
  Raw hog(f.server.port());
  std::string gets;
  for (int i = 0; i < 2000; ++i) gets += req(Dialect::D0, Op::Get, "/big");  // 2 GiB of replies
  hog.send(gets);
  REQUIRE(c.add("/others", 1) == 1);
  // Requests stop being answered once 16 MiB wait: one more 1 MiB reply past it at most.
  wait_until([&] { return f.server.unsent_bytes() > 0; });
  for (int i = 0; i < 50; ++i) {
    CHECK(f.server.unsent_bytes() <= 18 * (1 << 20));
    REQUIRE(c.add("/others", 1) == i + 2);
  }
  // Reading resumes the rest in order, with no new request from the client.
  for (int i = 0; i < 2000; ++i) {
    REQUIRE(hog.recv(8) == i64_bytes(1 << 20));
    REQUIRE(hog.recv(big.size()) == big);
  }
  hog.send(add_req(Dialect::D0, "/hog", 7));
  CHECK(hog.recv(8) == i64_bytes(7));
}

TEST_CASE("a watcher that never reads its notifications is closed, alone", "[server]") {
  Fixture f;
  StoreClient c = f.client();
  Raw watcher(f.server.port());
  watcher.send(req(Dialect::D0, Op::WatchKey, "/w"));
  REQUIRE(watcher.recv(1).size() == 1);  // the acknowledgement
  const std::string value(1 << 20, 'w');
  // Each overwrite pushes old and new value: 2 MiB a time, 80 MiB for 40 if nothing bounded it.
  for (int i = 0; i < 40; ++i) c.set("/w", value + std::to_string(i));
  CHECK(c.add("/n", 1) == 1);
  CHECK(f.server.unsent_bytes() <= 20 * (1 << 20));
  CHECK(drained_then_closed(watcher));
  CHECK(f.server.num_connections() == 1);
}

TEST_CASE("many watchers that do not read stay within max_buffered_bytes together", "[server]") {
  // Each watcher alone stays under its own bound; together they would hold watchers x (old +
  // new value) for every overwrite.
  ServerOptions o;
  o.limits.max_buffered_bytes = 8 * 1024 * 1024;
  Fixture f(o);
  StoreClient c = f.client();
  std::vector<std::unique_ptr<Raw>> watchers;
  for (int i = 0; i < 24; ++i) {
    watchers.push_back(std::make_unique<Raw>(f.server.port()));
    watchers.back()->send(req(Dialect::D0, Op::WatchKey, "/w"));
    REQUIRE(watchers.back()->recv(1).size() == 1);  // the acknowledgement
  }
  const std::string value(1 << 20, 'w');
  for (int i = 0; i < 4; ++i) c.set("/w", value + std::to_string(i));
  CHECK(c.add("/n", 1) == 1);  // the setter is served
  // One message (old and new value) over the budget at most, not 24 x 4 of them.
  CHECK(f.server.unsent_bytes() <= o.limits.max_buffered_bytes + 2 * value.size() + 64);
  int closed = 0;
  for (auto& w : watchers) closed += drained_then_closed(*w) ? 1 : 0;
  CHECK(closed >= 1);
}

TEST_CASE("past max_buffered_bytes of unsent replies the largest holder is closed, only it",
          "[server]") {
  ServerOptions o;
  o.limits.max_buffered_bytes = 40 * 1024 * 1024;
  Fixture f(o);
  StoreClient c = f.client();
  const std::string big(1 << 20, 'b');
  c.set("/big", big);
  REQUIRE(c.get("/big") == big);
  std::string gets;
  for (int i = 0; i < 64; ++i) gets += req(Dialect::D0, Op::Get, "/big");
  // Three clients that never read: each holds up to 17 MiB, together over the 40 MiB.
  std::vector<std::unique_ptr<Raw>> hogs;
  for (int i = 0; i < 3; ++i) {
    hogs.push_back(std::make_unique<Raw>(f.server.port()));
    hogs.back()->send(gets);
    REQUIRE(c.add("/others", 1) == i + 1);  // served, and each hog's requests were taken
  }
  CHECK(f.server.unsent_bytes() <= o.limits.max_buffered_bytes);
  int closed = 0;
  for (auto& hog : hogs) closed += drained_then_closed(*hog) ? 1 : 0;
  CHECK(closed >= 1);
  CHECK(closed < 3);
  CHECK(c.add("/others", 1) == 4);
}

TEST_CASE("the store's log is rate-limited and goes to the given sink", "[server]") {
  std::vector<std::string> lines;
  std::mutex mutex;
  ServerOptions o;
  o.log_sink = [&](std::string_view line) {
    std::lock_guard lock(mutex);
    lines.emplace_back(line);
  };
  Fixture f(o);
  StoreClient c = f.client();
  for (int i = 0; i < 100; ++i) {
    Raw bad(f.server.port());
    bad.send(std::string(1, '\x0d'));  // unknown command: closed and logged
    REQUIRE(bad.closed_by_server());
  }
  {
    std::lock_guard lock(mutex);
    CHECK(lines.size() <= 10);
    CHECK(lines.size() >= 1);
  }
  std::this_thread::sleep_for(1100ms);  // a new second: the next line says what was left out
  Raw bad(f.server.port());
  bad.send(std::string(1, '\x0d'));
  REQUIRE(bad.closed_by_server());
  wait_until([&] {
    std::lock_guard lock(mutex);
    return lines.back().find("earlier messages not shown") != std::string::npos;
  });
  CHECK(c.add("/n", 1) == 1);
}
