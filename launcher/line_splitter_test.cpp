#include "launcher/line_splitter.hpp"

#include <catch2/catch.hpp>

using namespace xlaunch::launcher;

namespace {
struct Collect {
  std::vector<std::pair<std::string, char>> pieces;
  void operator()(std::string_view text, char terminator) { pieces.emplace_back(text, terminator); }
};
using Pieces = std::vector<std::pair<std::string, char>>;
}  // namespace

TEST_CASE("lines split on newline, partial lines wait", "[lines]") {
  LineSplitter splitter;
  Collect out;
  splitter.feed("hello\nwor", std::ref(out));
  CHECK(out.pieces == Pieces{{"hello", '\n'}});
  CHECK(splitter.has_partial());
  splitter.feed("ld\n\n", std::ref(out));
  CHECK(out.pieces == Pieces{{"hello", '\n'}, {"world", '\n'}, {"", '\n'}});
  splitter.feed("tail", std::ref(out));
  splitter.flush(std::ref(out));
  CHECK(out.pieces.back() == std::pair<std::string, char>{"tail", '\0'});
  CHECK_FALSE(splitter.has_partial());
}

TEST_CASE("carriage returns end a piece, so progress bars redraw", "[lines]") {
  LineSplitter splitter;
  Collect out;
  splitter.feed("\r 10%|#  |\r 20%|## |\r100%|###|\n", std::ref(out));
  CHECK(out.pieces ==
        Pieces{{"", '\r'}, {" 10%|#  |", '\r'}, {" 20%|## |", '\r'}, {"100%|###|", '\n'}});
}

TEST_CASE("bytes arriving one at a time give the same pieces", "[lines]") {
  LineSplitter splitter;
  Collect out;
  for (char c : std::string("ab\ncd\re")) splitter.feed(std::string_view(&c, 1), std::ref(out));
  splitter.flush(std::ref(out));
  CHECK(out.pieces == Pieces{{"ab", '\n'}, {"cd", '\r'}, {"e", '\0'}});
}

TEST_CASE("very long lines are cut into bounded pieces", "[lines]") {
  LineSplitter splitter(8);
  Collect out;
  splitter.feed(std::string(20, 'x') + "\n", std::ref(out));
  REQUIRE(out.pieces.size() == 3);
  CHECK(out.pieces[0] == std::pair<std::string, char>{std::string(8, 'x'), '\0'});
  CHECK(out.pieces[1] == std::pair<std::string, char>{std::string(8, 'x'), '\0'});
  CHECK(out.pieces[2] == std::pair<std::string, char>{std::string(4, 'x'), '\n'});
  // Pieces never exceed the bound, even when fed in odd chunks.
  LineSplitter small(5);
  Collect more;
  small.feed("abc", std::ref(more));
  small.feed("defgh", std::ref(more));
  small.feed("ij\n", std::ref(more));
  CHECK(more.pieces == Pieces{{"abcde", '\0'}, {"fghij", '\n'}});
}
