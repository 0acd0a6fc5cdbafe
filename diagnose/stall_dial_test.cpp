#include "diagnose/stall_dial.hpp"

#include <catch2/catch.hpp>

using namespace xlaunch::diagnose;
using Catch::Contains;

TEST_CASE("a rank dialing elsewhere than the store is named with the address", "[dial]") {
  DialEvidence e;
  e.rank = 2;
  CHECK_FALSE(wrong_target(e, "127.0.0.1", 41000));  // no evidence
  e.connecting = {"127.0.0.1:41000"};
  CHECK_FALSE(wrong_target(e, "127.0.0.1", 41000));  // dialing the store: just slow
  CHECK_FALSE(wrong_target(e, "localhost", 41000));
  e.connecting = {"10.0.0.9:29500"};
  CHECK(wrong_target(e, "127.0.0.1", 41000) == "10.0.0.9:29500");
  e.connecting.clear();
  // Refused connects leave only an unlisted socket; the script's setting names the target.
  e.script_port = "23456";
  CHECK_FALSE(wrong_target(e, "127.0.0.1", 41000));  // no socket: not dialing (yet)
  e.unlisted_sockets = 1;
  CHECK(wrong_target(e, "127.0.0.1", 41000) == "127.0.0.1:23456");
  e.script_port = "41000";
  CHECK_FALSE(wrong_target(e, "127.0.0.1", 41000));  // set to the store's own port: fine
  e.script_addr = "::1";
  CHECK_FALSE(wrong_target(e, "127.0.0.1", 41000));
  e.script_addr = "10.1.1.1";
  CHECK(wrong_target(e, "127.0.0.1", 41000) == "10.1.1.1:41000");

  // What the rank wrote is checked: no port a TCPStore could dial, no address a script could
  // mean, no evidence (and no exception into the launcher's loop).
  e.script_addr.reset();
  for (const char* port : {"not-a-port", "${PORT}", "70000", "-1", "0", "1e5", "", "2950x"}) {
    e.script_port = port;
    CHECK_FALSE(wrong_target(e, "127.0.0.1", 41000));
  }
  e.script_port = " 23456 ";  // Python's int() takes it
  CHECK(wrong_target(e, "127.0.0.1", 41000) == "127.0.0.1:23456");
  for (const char* host : {"evil\x1b]0;title\x07", "a b", "",
                           "\x9b"
                           "31m"}) {
    e.script_addr = host;
    CHECK_FALSE(wrong_target(e, "127.0.0.1", 41000));
  }
  e.script_addr = std::string(300, 'h');
  CHECK_FALSE(wrong_target(e, "127.0.0.1", 41000));
  // A target from the socket tables is shown escaped all the same.
  CHECK_THAT(wrong_address_message(0, "a\x1b[2J:1", "127.0.0.1", 41000, false), !Contains("\x1b"));

  const std::string m = wrong_address_message(2, "127.0.0.1:23456", "127.0.0.1", 41000, true);
  CHECK_THAT(m, Contains("rank 2 keeps dialing 127.0.0.1:23456, but the store is at "
                         "127.0.0.1:41000 and has not heard from it"));
  CHECK_THAT(m, Contains("--main_process_port 23456"));
  CHECK(is_loopback("127.0.1.1"));
  CHECK_FALSE(is_loopback("10.0.0.1"));
}
