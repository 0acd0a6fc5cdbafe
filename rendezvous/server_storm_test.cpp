// Connect storms: a full accept queue is emptied before the server answers anyone, so a
// storm does not overflow the queue while the server serves the clients it already has.
#include <sys/resource.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "rendezvous/server_test_util.hpp"

using namespace xlaunch::rendezvous;
using namespace xlaunch::rendezvous::testing;

namespace {
// An ADD reply: the counter's new value, 8 bytes in the store's (native) byte order.
std::size_t counter(const std::string& reply) {
  std::int64_t v = 0;
  std::memcpy(&v, reply.data(), sizeof v);
  REQUIRE(v >= 1);
  return static_cast<std::size_t>(v);
}
}  // namespace

TEST_CASE("a queue of 1000 connections is accepted before the first request is answered",
          "[server][scale]") {
  raise_open_file_limit();
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  // Each client needs a descriptor here and the server one more (same process).
  const int n = 1000;
  REQUIRE(lim.rlim_cur >= static_cast<rlim_t>(2 * n + 64));
  // Listening but not served: every connect completes into the kernel's accept queue (its
  // backlog is at least 1000 wherever somaxconn is the default 4096), with its ADD queued.
  StoreServer server(ListeningSocket::bind("127.0.0.1", 0));
  const std::string add_one = add_req(Dialect::D0, "/count", 1);
  std::vector<Raw> raws;
  raws.reserve(n);
  for (int i = 0; i < n; ++i) {
    raws.emplace_back(server.port());
    raws.back().send(add_one);
  }
  server.start();
  // A reply means the loop has served a request, which it does only after the accept pass
  // that found the queue full; that pass takes the whole queue, not a first slice of it.
  std::string first = raws[0].recv(8);
  CHECK(server.num_connections() == static_cast<std::size_t>(n));
  std::vector<int> seen(n + 1, 0);
  ++seen.at(counter(first));
  for (int i = 1; i < n; ++i) ++seen.at(counter(raws[i].recv(8)));
  // Every ADD was counted exactly once: the replies are 1..n, each once.
  for (int v = 1; v <= n; ++v) CHECK(seen[static_cast<std::size_t>(v)] == 1);
}
