// ListeningSocket's errors: a port taken by another socket is told apart from other bind
// failures, so that a torchrun-style launcher can join the store that holds it.
#include <catch2/catch.hpp>

#include "rendezvous/store_error.hpp"
#include "rendezvous/store_server.hpp"

using namespace xlaunch::rendezvous;

TEST_CASE("ListeningSocket: a taken port throws AddressInUse; an unknown host does not",
          "[server]") {
  ListeningSocket taken = ListeningSocket::bind("127.0.0.1", 0);
  CHECK_THROWS_AS(ListeningSocket::bind("127.0.0.1", taken.port()), AddressInUse);
  // All interfaces ([::] dual-stack, then 0.0.0.0) collide with 127.0.0.1 as well.
  CHECK_THROWS_AS(ListeningSocket::bind("", taken.port()), AddressInUse);
  bool in_use = false;
  try {
    ListeningSocket::bind("no-such-host.invalid", 0);
  } catch (const AddressInUse&) {
    in_use = true;
  } catch (const StoreError&) {
  }
  CHECK_FALSE(in_use);
}
