#include "config/argparse_words.hpp"

#include <catch2/catch.hpp>

using xlaunch::config::argparse_spelling;
using xlaunch::config::KnownFlag;
using xlaunch::config::launcher_word_count;
using Words = std::vector<std::string>;

namespace {

// --role, --rdzv_id, --rdzv_endpoint and -r take a value; --standalone is a switch.
std::optional<KnownFlag> find(std::string_view spelling) {
  const KnownFlag known[] = {{"--role", true},
                             {"--rdzv_id", true},
                             {"--rdzv_endpoint", true},
                             {"-r", true},
                             {"--standalone", false}};
  std::optional<KnownFlag> found;
  for (const KnownFlag& flag : known) {
    if (flag.name == spelling) return flag;
    if (spelling.starts_with("--") && flag.name.starts_with(spelling)) {
      if (found) return std::nullopt;  // several
      found = flag;
    }
  }
  return found;
}

}  // namespace

TEST_CASE("an empty --flag= value is an empty value, not the next word", "[argparse]") {
  CHECK(argparse_spelling({"--role=", "train.py", "other.py"}, find) ==
        Words{"--role", "", "train.py", "other.py"});
  CHECK(argparse_spelling({"--standalone", "--rdzv_id=", "-r", "3", "t.py"}, find) ==
        Words{"--standalone", "--rdzv_id", "", "-r", "3", "t.py"});
}

TEST_CASE("a flag's value, a switch and an unknown flag are left as they are", "[argparse]") {
  CHECK(argparse_spelling({"--role=x", "--role", "--rdzv_id=", "t.py"}, find) ==
        Words{"--role=x", "--role", "--rdzv_id=", "t.py"});  // "--rdzv_id=" is --role's value
  CHECK(argparse_spelling({"--standalone=", "--nope=", "-r3", "t.py"}, find) ==
        Words{"--standalone=", "--nope=", "-r3", "t.py"});
}

TEST_CASE("an abbreviation of one flag is that flag, as argparse reads it", "[argparse]") {
  CHECK(argparse_spelling({"--stand", "--ro", "x", "--rdzv_e=h:1", "t.py", "--ro"}, find) ==
        Words{"--standalone", "--role", "x", "--rdzv_endpoint=h:1", "t.py", "--ro"});
  CHECK(argparse_spelling({"--ro=", "t.py"}, find) == Words{"--role", "", "t.py"});
  // Several flags begin "--rdzv": CLI11 refuses it, naming it.
  CHECK(argparse_spelling({"--rdzv", "x", "t.py"}, find) == Words{"--rdzv", "x", "t.py"});
}

TEST_CASE("the program and every word after it are the worker's", "[argparse]") {
  CHECK(argparse_spelling({"t.py", "--role=", "x"}, find) == Words{"t.py", "--role=", "x"});
  CHECK(argparse_spelling({"--", "--role=", "x"}, find) == Words{"--", "--role=", "x"});
  CHECK(argparse_spelling({"--role", "--role=", "--rdzv_id=", "t.py", "--rdzv_id="}, find) ==
        Words{"--role", "--role=", "--rdzv_id", "", "t.py", "--rdzv_id="});
  CHECK(argparse_spelling({"-", "--role="}, find) == Words{"-", "--role="});
  CHECK(argparse_spelling({}, find).empty());
}

TEST_CASE("the launcher's words end where the program starts", "[argparse]") {
  CHECK(launcher_word_count({"--role=", "t.py", "--role", "x"}, find) == 1);
  CHECK(launcher_word_count({"--role", "--standalone", "t.py"}, find) == 2);
  CHECK(launcher_word_count({"--standalone", "-r", "3", "--", "t.py"}, find) == 3);
  CHECK(launcher_word_count({"--stand", "--ro", "x", "t.py"}, find) == 3);
  CHECK(launcher_word_count({"t.py"}, find) == 0);
}
