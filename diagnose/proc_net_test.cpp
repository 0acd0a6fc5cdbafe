#include "diagnose/proc_net.hpp"

#include <catch2/catch.hpp>

using namespace xlaunch::diagnose;

TEST_CASE("socket tables: IPv4 and IPv6 rows, states and inodes", "[proc_net]") {
  // Rows as Linux writes them on a little-endian machine (the words are native-order).
  const char* tcp =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
      "timeout inode\n"
      "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0     "
      "   0 1548372 1 000000008c96d649 100 0 0 10 0\n"
      "   1: 0100007F:D431 0100007F:5BA0 02 00000001:00000000 01:00000064 00000002     0     "
      "   0 1590517 1 0000000000000000 100 0 0 10 -1\n"
      "garbage line\n";
  auto rows = parse_socket_table(tcp);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].local_addr == "127.0.0.1");
  CHECK(rows[0].local_port == 8080);
  CHECK(rows[0].state == 10);
  CHECK(rows[0].inode == 1548372);
  CHECK(rows[1].state == kTcpSynSent);
  CHECK(rows[1].remote_addr == "127.0.0.1");
  CHECK(rows[1].remote_port == 23456);
  CHECK(endpoint(rows[1].remote_addr, rows[1].remote_port) == "127.0.0.1:23456");

  const char* tcp6 =
      "  sl  local_address                         remote_address                        st "
      "tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
      "   0: 0000000000000000FFFF00000100007F:A1B2 0000000000000000FFFF00000100007F:5BA0 01 "
      "00000000:00000000 00:00000000 00000000     0        0 77 1 0 20 4 30 10 -1\n"
      "   1: 00000000000000000000000001000000:0050 00000000000000000000000000000000:0000 0A "
      "00000000:00000000 00:00000000 00000000     0        0 78 1 0 20 4 30 10 -1\n";
  rows = parse_socket_table(tcp6);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].local_addr == "127.0.0.1");  // IPv4-mapped
  CHECK(rows[0].remote_port == 23456);
  CHECK(rows[0].state == kTcpEstablished);
  CHECK(rows[1].local_addr == "::1");
  CHECK(rows[1].remote_addr == "::");
  CHECK(endpoint("::1", 80) == "[::1]:80");
}

TEST_CASE("unix table inodes and fd links", "[proc_net]") {
  const char* unix_table =
      "Num       RefCount Protocol Flags    Type St Inode Path\n"
      "0000000000000000: 00000002 00000000 00010000 0001 01 21016 /run/systemd/notify\n"
      "0000000000000000: 00000003 00000000 00000000 0001 03 1590624\n";
  CHECK(parse_unix_inodes(unix_table) == std::vector<unsigned long>{21016, 1590624});
  CHECK(socket_inode("socket:[1590517]") == 1590517UL);
  CHECK_FALSE(socket_inode("pipe:[12]"));
  CHECK_FALSE(socket_inode("socket:[]"));
  CHECK_FALSE(socket_inode("/dev/null"));
}

TEST_CASE("proc stat: command names with blanks and parentheses", "[proc_net]") {
  auto s = parse_proc_stat(
      "4242 (python3 (a) b) S 4000 4242 4000 0 -1 4194560 100 0 0 0 250 31 0 0 20 0 3 0 "
      "1000 0 0\n");
  REQUIRE(s);
  CHECK(s->pid == 4242);
  CHECK(s->state == 'S');
  CHECK(s->ppid == 4000);
  CHECK(s->cpu_ticks == 281);
  CHECK_FALSE(parse_proc_stat("4242 python3 S 1"));
  CHECK_FALSE(parse_proc_stat("4242 (x) S 1 2"));
}
