#include "config/argparse_words.hpp"

#include <catch2/catch.hpp>

using xlaunch::config::argparse_spelling;
using Words = std::vector<std::string>;

namespace {

// --role and -r take a value; --standalone is a switch; nothing else is known.
std::optional<bool> takes_value(std::string_view name) {
  if (name == "--role" || name == "--rdzv_id" || name == "-r") return true;
  if (name == "--standalone") return false;
  return std::nullopt;
}

}  // namespace

TEST_CASE("an empty --flag= value is an empty value, not the next word", "[argparse]") {
  CHECK(argparse_spelling({"--role=", "train.py", "other.py"}, takes_value) ==
        Words{"--role", "", "train.py", "other.py"});
  CHECK(argparse_spelling({"--standalone", "--rdzv_id=", "-r", "3", "t.py"}, takes_value) ==
        Words{"--standalone", "--rdzv_id", "", "-r", "3", "t.py"});
}

TEST_CASE("a flag's value, a switch and an unknown flag are left as they are", "[argparse]") {
  CHECK(argparse_spelling({"--role=x", "--role", "--rdzv_id=", "t.py"}, takes_value) ==
        Words{"--role=x", "--role", "--rdzv_id=", "t.py"});  // "--rdzv_id=" is --role's value
  CHECK(argparse_spelling({"--standalone=", "--nope=", "t.py"}, takes_value) ==
        Words{"--standalone=", "--nope=", "t.py"});
}

TEST_CASE("the program and every word after it are the worker's", "[argparse]") {
  CHECK(argparse_spelling({"t.py", "--role=", "x"}, takes_value) == Words{"t.py", "--role=", "x"});
  CHECK(argparse_spelling({"--", "--role=", "x"}, takes_value) == Words{"--", "--role=", "x"});
  CHECK(argparse_spelling({"--role", "--role=", "--rdzv_id=", "t.py", "--rdzv_id="}, takes_value) ==
        Words{"--role", "--role=", "--rdzv_id", "", "t.py", "--rdzv_id="});
  CHECK(argparse_spelling({"-", "--role="}, takes_value) == Words{"-", "--role="});
  CHECK(argparse_spelling({}, takes_value).empty());
}

TEST_CASE("the launcher's words end where the program starts", "[argparse]") {
  using xlaunch::config::launcher_word_count;
  CHECK(launcher_word_count({"--role=", "t.py", "--role", "x"}, takes_value) == 1);
  CHECK(launcher_word_count({"--role", "--standalone", "t.py"}, takes_value) == 2);
  CHECK(launcher_word_count({"--standalone", "-r", "3", "--", "t.py"}, takes_value) == 3);
  CHECK(launcher_word_count({"t.py"}, takes_value) == 0);
  CHECK(launcher_word_count({"--standalone"}, takes_value) == 1);
}
