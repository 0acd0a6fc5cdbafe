// StoreServer + StoreClient over loopback: every operation, blocking waits, the server's
// descriptors, and what the launcher asks of it (clear, stop, clients). Many clients:
// server_scale_test.cpp; misbehaving ones: server_hostile_test.cpp.
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "rendezvous/server_test_util.hpp"

using namespace xlaunch::rendezvous;
using namespace xlaunch::rendezvous::testing;
using namespace std::chrono_literals;

TEST_CASE("client and server: every operation", "[server]") {
  Fixture f;
  StoreClient c = f.client();
  c.ping();
  c.set("/k", "v1");
  CHECK(c.get("/k") == "v1");
  CHECK(c.add("/ctr", 5) == 5);
  CHECK(c.add("/ctr", -2) == 3);
  CHECK(c.get("/ctr") == "3");
  CHECK(c.compare_set("/cs", "", "new") == "new");
  CHECK(c.compare_set("/cs", "new", "x") == "x");
  CHECK(c.compare_set("/cs", "bad", "y") == "x");
  CHECK(c.compare_set("/missing", "abc", "d") == "abc");
  CHECK(c.check({"/k", "/ctr"}));
  CHECK_FALSE(c.check({"/k", "/nope"}));
  CHECK(c.check({}));
  CHECK(c.num_keys() == 3);
  CHECK(f.server.num_keys() == 3);
  CHECK(c.remove("/k"));
  CHECK_FALSE(c.remove("/k"));
  c.append("/log", "a");
  c.append("/log", "bc");
  CHECK(c.get("/log") == "abc");
  c.multi_set({{"/m1", "x"}, {"/m2", std::string("\0y", 2)}});
  CHECK(c.multi_get({"/m1", "/m2"}) == std::vector<std::string>{"x", std::string("\0y", 2)});
  std::string big(8 * 1024 * 1024, 'z');
  c.set("/big", big);
  CHECK(c.get("/big") == big);
  CHECK(f.server.num_connections() == 1);
}

TEST_CASE("a WAIT is woken by another client's SET", "[server]") {
  Fixture f;
  StoreClient waiter = f.client();
  std::atomic<bool> done{false};
  std::thread t([&] {
    waiter.wait({"/later", "/other"}, 30s);
    done = true;
  });
  StoreClient setter = f.client();
  setter.set("/other", "1");
  setter.set("/later", "1");
  t.join();
  CHECK(done);
  CHECK(waiter.get("/later") == "1");
}

TEST_CASE("get blocks until the key is set", "[server]") {
  Fixture f;
  StoreClient a = f.client();
  std::string got;
  std::thread t([&] { got = a.get("/soon", 30s); });
  StoreClient b = f.client();
  CHECK(b.add("/soon", 7) == 7);
  t.join();
  CHECK(got == "7");
}

TEST_CASE("a timed-out wait cancels and the connection stays usable", "[server]") {
  Fixture f;
  StoreClient c = f.client();
  CHECK_THROWS_AS(c.wait({"/never"}, 50ms), StoreTimeout);
  try {
    c.wait({"/never"}, 10ms);
  } catch (const StoreTimeout& e) {
    CHECK_THAT(e.what(), Catch::Contains("127.0.0.1") && Catch::Contains("/never") &&
                             Catch::Contains("timed out"));
  }
  c.set("/after", "ok");
  CHECK(c.get("/after") == "ok");
  // The cancelled wait must not fire later and desynchronise the stream.
  StoreClient other = f.client();
  other.set("/never", "now");
  CHECK(c.add("/n", 1) == 1);
  CHECK(c.get("/never") == "now");
}

TEST_CASE("CANCEL_WAIT after STOP_WAITING: the client reads 00 01", "[server]") {
  Fixture f;
  Raw raw(f.server.port());
  std::string hello = validate_req();
  Request wait;
  wait.op = Op::Wait;
  wait.keys = {"/w"};
  encode_request(hello, Dialect::D2, wait);
  raw.send(hello);
  StoreClient other = f.client();
  other.set("/w", "x");
  // SET has no reply: a round trip makes sure the server applied it before CANCEL_WAIT
  // arrives, or the client would read only 01.
  CHECK(other.get("/w") == "x");
  raw.send(req(Dialect::D2, Op::CancelWait));
  CHECK(raw.recv(2) == std::string("\x00\x01", 2));
}

TEST_CASE("clear() empties the store and closes parked waiters", "[server]") {
  Fixture f;
  StoreClient c = f.client();
  c.set("/a", "1");
  c.set("/b", "2");
  Raw parked(f.server.port());
  Request w;
  w.op = Op::Wait;
  w.keys = {"/never"};
  std::string s;
  encode_request(s, Dialect::D0, w);
  parked.send(s);
  // Poll (no timing assumption) until the server has parked the WAIT.
  while (f.server.num_parked() != 1) std::this_thread::sleep_for(1ms);
  f.server.clear();
  CHECK(parked.closed_by_server());
  CHECK(f.server.num_parked() == 0);
  CHECK(f.server.num_keys() == 0);
  CHECK(c.num_keys() == 0);
  CHECK_FALSE(c.check({"/a"}));
}

TEST_CASE("IPv6 loopback works when the host has it", "[server]") {
  ListeningSocket s = ListeningSocket::bind("", 0);
  StoreServer server(std::move(s));
  server.start();
  ClientOptions o;
  o.host = "127.0.0.1";  // v4-mapped onto the dual-stack socket
  o.port = server.port();
  StoreClient c = StoreClient::connect(o);
  c.set("/v4", "1");
  o.host = "::1";
  o.connect_timeout = 2s;
  try {
    StoreClient c6 = StoreClient::connect(o);
    CHECK(c6.get("/v4") == "1");
  } catch (const StoreError& e) {
    WARN("no IPv6 loopback here: " << e.what());
  }
}

TEST_CASE("the store's descriptors are close-on-exec (workers inherit none)", "[server]") {
  Fixture f;
  StoreClient a = f.client();
  StoreClient b = f.client();
  a.set("/x", "1");
  CHECK(b.get("/x") == "1");
  REQUIRE(f.server.num_connections() == 2);  // both accepted server-side
  int sockets = 0;
  for (int fd = 0; fd < 4096; ++fd) {
    int flags = ::fcntl(fd, F_GETFD);
    if (flags < 0) continue;
    int type = 0;
    socklen_t len = sizeof type;
    if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0) continue;  // not a socket
    ++sockets;
    INFO("fd " << fd);
    CHECK((flags & FD_CLOEXEC) != 0);
  }
  CHECK(sockets >= 5);  // listener, 2 client ends, 2 accepted ends
}

TEST_CASE("accepted connections have TCP_NODELAY (no reply waits behind an ACK)", "[server]") {
  Fixture f;
  StoreClient a = f.client();
  a.set("/x", "1");
  CHECK(a.get("/x") == "1");
  REQUIRE(f.server.num_connections() == 1);
  int accepted = 0;
  for (int fd = 0; fd < 4096; ++fd) {
    sockaddr_storage local{}, peer{};
    socklen_t len = sizeof local;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) continue;
    len = sizeof peer;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) continue;  // listener
    if (local.ss_family != AF_INET) continue;
    // The server's end of a connection is the one whose local port is the store's.
    if (ntohs(reinterpret_cast<sockaddr_in*>(&local)->sin_port) != f.server.port()) continue;
    ++accepted;
    int nodelay = 0;
    len = sizeof nodelay;
    REQUIRE(::getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, &len) == 0);
    CHECK(nodelay != 0);
  }
  CHECK(accepted == 1);
}

TEST_CASE("ListeningSocket: a taken port is an error naming the address", "[server]") {
  ListeningSocket taken = ListeningSocket::bind("127.0.0.1", 0);
  try {
    ListeningSocket::bind("127.0.0.1", taken.port());
    FAIL("bound a port that is in use");
  } catch (const StoreError& e) {
    CHECK_THAT(e.what(), Catch::Contains("127.0.0.1:" + std::to_string(taken.port())) &&
                             Catch::Contains("in use"));
  }
  CHECK_THROWS_AS(ListeningSocket::bind("no-such-host.invalid", 0), StoreError);
  int fd = taken.release();
  CHECK(fd >= 0);
  ::close(fd);
}

TEST_CASE("stop() closes every connection, parked ones included, and is idempotent", "[server]") {
  auto server = std::make_unique<StoreServer>(ListeningSocket::bind("127.0.0.1", 0));
  server->start();
  Raw parked(server->port());
  Request w;
  w.op = Op::Wait;
  w.keys = {"/never"};
  std::string s;
  encode_request(s, Dialect::D0, w);
  parked.send(s);
  while (server->num_parked() != 1) std::this_thread::sleep_for(1ms);
  Raw idle(server->port());
  server->stop();
  CHECK(parked.closed_by_server());
  CHECK(idle.closed_by_server());
  server->stop();
  server.reset();
}

TEST_CASE("clients() lists each connection's peer, requests and parked keys", "[server]") {
  Fixture f;
  CHECK(f.server.clients().empty());
  StoreClient waiter = f.client();
  std::thread t([&] { waiter.wait({"/a", "/b"}, 30s); });
  StoreClient setter = f.client();
  setter.set("/a", "1");
  CHECK(setter.get("/a") == "1");  // SET has no reply: a round trip makes sure it was applied
  // The waiter is parked on /b alone once its WAIT arrived (the client sends it from t).
  std::vector<StoreServer::ClientInfo> clients;
  for (int i = 0; i < 3000; ++i) {
    clients = f.server.clients();
    bool parked = false;
    for (const auto& c : clients) parked = parked || !c.waiting.empty();
    if (parked) break;
    std::this_thread::sleep_for(10ms);
  }
  REQUIRE(clients.size() == 2);
  int parked = 0;
  for (const auto& c : clients) {
    CHECK(c.peer_addr == "127.0.0.1");
    CHECK(c.peer_port != 0);
    CHECK(c.requests >= 1);
    if (!c.waiting.empty()) {
      ++parked;
      CHECK(c.waiting == std::vector<std::string>{"/b"});
    }
  }
  CHECK(parked == 1);
  CHECK(clients[0].peer_port != clients[1].peer_port);
  setter.set("/b", "1");
  t.join();
  for (const auto& c : f.server.clients()) CHECK(c.waiting.empty());
}