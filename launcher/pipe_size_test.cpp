#include "launcher/pipe_size.hpp"

#include <catch2/catch.hpp>

using namespace xlaunch::launcher;

TEST_CASE("a machine's rank pipes get 256 KiB while they stay within 1/16 of the soft limit",
          "[pipes]") {
  // Debian's default: 16384 pages of 4 KiB (64 MiB); a sixteenth is 1024 pages.
  CHECK(rank_pipe_size(2, 16384, 4096) == 256 << 10);
  CHECK(rank_pipe_size(16, 16384, 4096) == 256 << 10);  // 8 ranks: 16 x 64 pages
  CHECK(rank_pipe_size(17, 16384, 4096) == 128 << 10);
  CHECK(rank_pipe_size(32, 16384, 4096) == 128 << 10);  // 16 ranks: 32 x 32 pages
  CHECK(rank_pipe_size(33, 16384, 4096) == 0);          // the kernel's default
  CHECK(rank_pipe_size(512, 16384, 4096) == 0);
}

TEST_CASE("no soft limit, larger pages, and nothing to size", "[pipes]") {
  CHECK(rank_pipe_size(1000, 0, 4096) == 256 << 10);
  CHECK(rank_pipe_size(16, 16384, 65536) == 256 << 10);  // 4 pages each
  CHECK(rank_pipe_size(0, 16384, 4096) == 0);
  CHECK(rank_pipe_size(2, 100, 4096) == 0);  // a lowered limit leaves no room
}
