#include "launcher/random_bits.hpp"

#include <catch2/catch.hpp>
#include <set>

using namespace xlaunch::launcher;

TEST_CASE("random bits differ from call to call and use all 64 bits", "[random]") {
  std::set<std::uint64_t> seen;
  std::uint64_t any_high = 0;
  for (int i = 0; i < 64; ++i) {
    const std::uint64_t bits = random_bits();
    seen.insert(bits);
    any_high |= bits >> 32;
  }
  CHECK(seen.size() == 64);  // a repeat among 64 draws of 2^64: about 1e-16
  CHECK(any_high != 0);      // the high half is filled, not a widened 32-bit value
}
