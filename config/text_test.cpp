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
