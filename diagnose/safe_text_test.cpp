#include "diagnose/safe_text.hpp"

#include <catch2/catch.hpp>

using namespace xlaunch::diagnose;

TEST_CASE("control characters in worker text are escaped, lines and UTF-8 kept", "[stacks]") {
  CHECK(escape_controls("File \"a.py\", line 3\n\tx") == "File \"a.py\", line 3\n\tx");
  CHECK(escape_controls("\x1b]0;owned\x07\x1b[2J\r") == "\\x1b]0;owned\\x07\\x1b[2J\\x0d");
  CHECK(escape_controls(std::string("a\0b", 3)) == "a\\x00b");
  CHECK(escape_controls("\x7f") == "\\x7f");
  CHECK(escape_controls("\xc2\x9b"
                        "31m") == "\\u009b31m");                             // CSI as UTF-8
  CHECK(escape_controls("caf\xc3\xa9 \xc2\xa0") == "caf\xc3\xa9 \xc2\xa0");  // é, no-break space
  CHECK(escape_controls("\xc2") == "\xc2");  // a truncated sequence is kept as it is
}

TEST_CASE("within one line a newline is escaped too", "[safe_text]") {
  CHECK(escape_controls("a\nb\tc", false) == "a\\x0ab\tc");
  CHECK(escape_controls("a\nb", true) == "a\nb");
}
