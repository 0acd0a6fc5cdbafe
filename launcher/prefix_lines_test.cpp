#include "launcher/prefix_lines.hpp"

#include <catch2/catch.hpp>
#include <random>
#include <string>

#include "launcher/line_splitter.hpp"

using namespace xlaunch::launcher;

namespace {

// What the console gets for `reads` through the general path alone.
std::string general(const std::vector<std::string>& reads, std::size_t max_piece) {
  LineSplitter splitter(max_piece);
  ConsoleBatch batch;
  for (const std::string& read : reads)
    splitter.feed(read, [&](std::string_view text, char t) { batch.add("[rank7]: ", text, t); });
  splitter.flush([&](std::string_view text, char t) { batch.add("[rank7]: ", text, t); });
  return std::string(batch.view());
}

// The same through feed_shown, as the supervisor does.
std::string fast(const std::vector<std::string>& reads, std::size_t max_piece,
                 std::uint64_t& fast_lines) {
  LineSplitter splitter(max_piece);
  ConsoleBatch batch;
  for (const std::string& read : reads) {
    feed_shown(
        splitter, batch, "[rank7]: ", read,
        [&](std::string_view text, char t) { batch.add("[rank7]: ", text, t); },
        [&](const PrefixedLines& plain) { fast_lines += plain.lines; });
  }
  splitter.flush([&](std::string_view text, char t) { batch.add("[rank7]: ", text, t); });
  return std::string(batch.view());
}

}  // namespace

TEST_CASE("plain lines are prefixed in one pass, the rest is left to the splitter", "[lines]") {
  ConsoleBatch batch;
  const std::string input = "first line here\n\nthird one, a bit longer\nno\rbar\ntail";
  const PrefixedLines plain = prefix_plain_lines(batch, "[rank0]: ", input, 1024);
  CHECK(batch.view() == "[rank0]: first line here\n[rank0]: \n[rank0]: third one, a bit longer\n");
  CHECK(plain.lines == 3);
  CHECK(plain.last_text == "third one, a bit longer");
  CHECK(input.substr(plain.consumed) == "no\rbar\ntail");
}

TEST_CASE("a line longer than the piece limit is left to the splitter to cut", "[lines]") {
  ConsoleBatch batch;
  const std::string input = "short\n" + std::string(100, 'x') + "\nafter\n" + std::string(20, 'y');
  const PrefixedLines plain = prefix_plain_lines(batch, "[r]", input, 64);
  CHECK(batch.view() == "[r]short\n");
  CHECK(plain.consumed == 6);
}

TEST_CASE("the fast path gives the console exactly what the splitter alone gives", "[lines]") {
  std::mt19937 random(20261126);
  const std::string alphabet = "abcdefghij\n\n\n\r ";
  std::uint64_t fast_lines = 0;
  for (int round = 0; round < 3000; ++round) {
    const std::size_t max_piece = 8 + random() % 200;
    std::vector<std::string> reads;
    const int count = 1 + static_cast<int>(random() % 6);
    for (int r = 0; r < count; ++r) {
      std::string read;
      const std::size_t size = random() % 400;
      // Mostly plain lines of varied length, some '\r', some long runs without newline.
      const bool plain = random() % 4 != 0;
      for (std::size_t i = 0; i < size; ++i) {
        char c = alphabet[random() % alphabet.size()];
        if (plain && c == '\r') c = 'r';
        if (random() % 50 == 0) read.append(random() % 300, 'L');
        read.push_back(c);
      }
      reads.push_back(read);
    }
    INFO("round " << round);
    REQUIRE(fast(reads, max_piece, fast_lines) == general(reads, max_piece));
  }
  CHECK(fast_lines > 10000);  // the fast path did take most plain lines
}
