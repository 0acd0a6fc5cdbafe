#include "launcher/console_buffer.hpp"

#include <catch2/catch.hpp>
#include <string>

using xlaunch::launcher::ConsoleBuffer;
using xlaunch::launcher::count_lines;

TEST_CASE("count_lines counts terminators and an unterminated tail") {
  CHECK(count_lines("") == 0);
  CHECK(count_lines("a\n") == 1);
  CHECK(count_lines("a\nb") == 2);
  CHECK(count_lines("bar\rbar\r") == 2);
}

TEST_CASE("console buffer queues until written, oldest first") {
  ConsoleBuffer buffer(100, 10);
  buffer.add_worker_text("[rank0]: one\n");
  buffer.add_worker_text("[rank1]: two\n");
  CHECK(buffer.pending() == "[rank0]: one\n[rank1]: two\n");
  buffer.consume(5);
  CHECK(buffer.pending() == "0]: one\n[rank1]: two\n");
  buffer.consume(1000);
  CHECK(buffer.pending().empty());
  CHECK(buffer.dropped_lines_total() == 0);
}

TEST_CASE("worker lines past the cap are dropped whole and counted") {
  ConsoleBuffer buffer(20, 30);
  buffer.add_worker_text("0123456789\n");  // 11 bytes
  buffer.add_worker_text("abcdefghij\n");  // would make 22 > 20: dropped
  buffer.add_worker_text("x\ny\n");        // 15: fits
  CHECK(buffer.pending() == "0123456789\nx\ny\n");
  CHECK(buffer.dropped_lines_total() == 1);
  SECTION("xlaunch's own messages use the reserve") {
    buffer.add_own_text("xlaunch: error\n");  // 30 <= 50
    CHECK(buffer.pending().ends_with("xlaunch: error\n"));
    buffer.add_own_text(std::string(40, 'e') + "\n");  // past even the reserve
    CHECK(buffer.dropped_lines_total() == 2);
  }
}

TEST_CASE("a notice says how many lines were dropped once there is room again") {
  ConsoleBuffer buffer(20, 200);
  buffer.add_worker_text("0123456789abcdefg\n");
  buffer.add_worker_text("lost 1\n");
  buffer.add_worker_text("lost 2\n");
  buffer.note_drops_if_any();  // still full: no notice yet
  CHECK(buffer.pending() == "0123456789abcdefg\n");
  buffer.consume(18);
  buffer.note_drops_if_any();
  CHECK(buffer.pending().starts_with("xlaunch: 2 console lines dropped"));
  buffer.consume(buffer.pending().size());
  buffer.note_drops_if_any();  // counted once
  CHECK(buffer.pending().empty());
  CHECK(buffer.dropped_lines_total() == 2);
}

TEST_CASE("a closed console loses what was queued and everything after, without growing") {
  ConsoleBuffer buffer(100, 10);
  buffer.add_worker_text("a\nb\n");
  buffer.close();
  CHECK(buffer.closed());
  CHECK(buffer.pending().empty());
  buffer.add_worker_text("c\n");
  buffer.add_own_text("xlaunch: d\n");
  CHECK(buffer.pending().empty());
  CHECK(buffer.lost_lines_total() == 4);
  CHECK(buffer.dropped_lines_total() == 0);
}

TEST_CASE("the written prefix is reclaimed, so a busy console stays within its cap") {
  ConsoleBuffer buffer(64, 0);
  const std::string line = "[rank0]: 0123456789\n";  // 20 bytes
  for (int i = 0; i < 1000; ++i) {
    buffer.add_worker_text(line);
    buffer.consume(line.size());
  }
  CHECK(buffer.pending().empty());
  CHECK(buffer.dropped_lines_total() == 0);
}

TEST_CASE("of a batch of lines, those that fit are kept and the rest dropped and counted") {
  ConsoleBuffer buffer(20, 0);
  buffer.add_worker_text("0123456789\n");
  buffer.add_worker_text("abc\ndef\nghi\n");  // 4 + 4 fit in the 9 bytes left, "ghi" not
  CHECK(buffer.pending() == "0123456789\nabc\ndef\n");
  CHECK(buffer.dropped_lines_total() == 1);
  buffer.add_worker_text("xy\n");  // no whole line fits in 1 byte: dropped, never cut
  CHECK(buffer.pending() == "0123456789\nabc\ndef\n");
  CHECK(buffer.dropped_lines_total() == 2);
  buffer.consume(buffer.pending().size());
  buffer.add_worker_text("bar\rbar\rlast\n");  // a progress bar's redraws are lines too
  CHECK(buffer.pending() == "bar\rbar\rlast\n");
}
