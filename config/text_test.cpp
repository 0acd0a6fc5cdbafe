#include "config/text.hpp"

#include <catch2/catch.hpp>

using namespace xlaunch::config;

TEST_CASE("trim drops blanks at both ends only", "[text]") {
  CHECK(trim("  a b \t\r\n") == "a b");
  CHECK(trim(" \n ").empty());
}

TEST_CASE("split keeps empty pieces", "[text]") {
  CHECK(split("a,,b", ',') == std::vector<std::string_view>{"a", "", "b"});
  CHECK(split("", ',') == std::vector<std::string_view>{""});
}

TEST_CASE("parse_int takes a whole base-10 int, blanks aside", "[text]") {
  int n = 0;
  CHECK(parse_int(" 42 ", n));
  CHECK(n == 42);
  CHECK(parse_int("-3", n));
  CHECK(n == -3);
  CHECK_FALSE(parse_int("4x", n));
  CHECK_FALSE(parse_int("", n));
  CHECK_FALSE(parse_int("99999999999", n));  // overflow
}

TEST_CASE("JSON strings survive control characters and broken UTF-8", "[text]") {
  CHECK(json_quote("a\"b\\c\n") == "\"a\\\"b\\\\c\\n\"");
  CHECK(json_quote(std::string("\x01", 1)) == "\"\\u0001\"");
  CHECK(json_quote("héllo") == "\"héllo\"");
  CHECK(json_quote("\xff") == "\"\\ufffd\"");
  CHECK(json_quote("\xc3") == "\"\\ufffd\"");  // truncated sequence at the end
  // Ill-formed sequences JSON readers refuse, each byte of them U+FFFD.
  CHECK(json_quote("\xe0\x80\x80") == "\"\\ufffd\\ufffd\\ufffd\"");             // overlong NUL
  CHECK(json_quote("\xed\xa0\x80") == "\"\\ufffd\\ufffd\\ufffd\"");             // a surrogate
  CHECK(json_quote("\xf4\x90\x80\x80") == "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");  // past U+10FFFF
  CHECK(json_quote("\xf5\x80\x80") == "\"\\ufffd\\ufffd\\ufffd\"");
  CHECK(json_quote("\xc0\xaf") == "\"\\ufffd\\ufffd\"");
  // Well-formed edges stay as they are.
  CHECK(json_quote("\xed\x9f\xbf") == "\"\xed\x9f\xbf\"");          // U+D7FF
  CHECK(json_quote("\xf4\x8f\xbf\xbf") == "\"\xf4\x8f\xbf\xbf\"");  // U+10FFFF
  CHECK(json_quote("\xf0\x9f\x98\x80") == "\"\xf0\x9f\x98\x80\"");  // an emoji
}

TEST_CASE("iso_time: UTC with milliseconds", "[text]") {
  const auto t =
      std::chrono::system_clock::time_point(std::chrono::milliseconds(1'700'000'000'123));
  CHECK(iso_time(t) == "2023-11-14T22:13:20.123Z");
}
