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
