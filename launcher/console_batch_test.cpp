#include "launcher/console_batch.hpp"

#include <catch2/catch.hpp>
#include <string>

using namespace xlaunch::launcher;

TEST_CASE("console pieces carry the rank prefix and keep \\r", "[console_batch]") {
  ConsoleBatch batch;
  CHECK(batch.empty());
  batch.add("[rank1]: ", "loss 0.5", '\n');
  batch.add("[rank1]: ", " 50%", '\r');
  batch.add("[rank1]: ", "partial", '\0');
  CHECK(batch.view() == "[rank1]: loss 0.5\n[rank1]:  50%\r[rank1]: partial\n");
  batch.clear();
  CHECK(batch.empty());
  batch.add("[rank2]: ", "", '\n');
  CHECK(batch.view() == "[rank2]: \n");
}

TEST_CASE("a batch grows past what was reserved and keeps what it held", "[console_batch]") {
  ConsoleBatch batch;
  batch.reserve(4, 1, 3);
  std::string expected;
  for (int i = 0; i < 5000; ++i) {
    const std::string text(static_cast<std::size_t>(i % 300), static_cast<char>('a' + i % 26));
    batch.add("[r]", text, '\n');
    expected += "[r]" + text + "\n";
  }
  batch.add_newline();
  expected += "\n";
  CHECK(batch.view() == expected);
}
