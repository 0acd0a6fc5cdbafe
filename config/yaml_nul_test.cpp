// A NUL byte in a config file (issue 19, item 11): named where it is, not printed raw.
#include <catch2/catch.hpp>
#include <string>

#include "config/usage_error.hpp"
#include "config/yaml_io.hpp"

using namespace xlaunch::config;

TEST_CASE("a NUL byte in a YAML file is named by line and column", "[yaml]") {
  const std::string text("num_processes: 2\nmixed_precision: b\0f16\n", 40);
  try {
    parse_yaml(text, "c.yaml");
    FAIL("no error");
  } catch (const xlaunch::UsageError& e) {
    const std::string what = e.what();
    CHECK(what ==
          "cannot read config file c.yaml:\nc.yaml:2:19: a NUL byte; a config file is text");
    CHECK(what.find('\0') == std::string::npos);
  }
}

TEST_CASE("a \\0 escape in a quoted value is named where it is", "[yaml]") {
  // yaml-cpp turns "\0" into a NUL: the value was cut short where the OS read it.
  try {
    parse_yaml("num_processes: 2\npython: \"/usr/bin/python3\\0x\"\n", "c.yaml");
    FAIL("no error");
  } catch (const xlaunch::UsageError& e) {
    CHECK(std::string(e.what()) ==
          "cannot read config file c.yaml:\nc.yaml:2:9: a value holding a NUL character (\\0)");
  }
}

TEST_CASE("a second YAML document is refused, not dropped", "[yaml]") {
  try {
    parse_yaml("num_processes: 2\n---\nnum_processes: 3\n", "c.yaml");
    FAIL("no error");
  } catch (const xlaunch::UsageError& e) {
    CHECK(std::string(e.what()) ==
          "cannot read config file c.yaml:\nc.yaml:3: a second YAML document; a config file "
          "holds one");
  }
  // A leading '---' starts the one document; an empty file is an empty document.
  CHECK(parse_yaml("---\nnum_processes: 2\n", "c.yaml")["num_processes"].as<int>() == 2);
  CHECK(parse_yaml("", "c.yaml").IsNull());
}

namespace {

// Nested aliases, each level naming the one below ten times: 10^depth values when expanded.
std::string alias_levels(int depth, const std::string& bottom) {
  std::string text = "tp_config:\n  - &a0 [" + bottom + ", x]\n";
  for (int level = 1; level < depth; ++level) {
    text += "  - &a" + std::to_string(level) + " [";
    for (int i = 0; i < 10; ++i) text += (i ? ", *a" : "*a") + std::to_string(level - 1);
    text += "]\n";
  }
  return text;
}

}  // namespace

TEST_CASE("nested YAML aliases are read once each, not expanded", "[yaml]") {
  // 10^15 values expanded: walked as expansions, this never ends (it took hours at 10^12).
  CHECK(parse_yaml(alias_levels(15, "x"), "c.yaml")["tp_config"].size() == 15);
  // What an alias names is still looked at.
  try {
    parse_yaml(alias_levels(15, "\"a\\0b\""), "c.yaml");
    FAIL("no error");
  } catch (const xlaunch::UsageError& e) {
    CHECK(std::string(e.what()) ==
          "cannot read config file c.yaml:\nc.yaml:2:10: a value holding a NUL character (\\0)");
  }
}
