// A launch inside a worker of another xlaunch job (issue 19, item 9).
#include <catch2/catch.hpp>
#include <map>

#include "config/env_settings.hpp"

using namespace xlaunch::config;

namespace {

Getenv env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

}  // namespace

TEST_CASE("inside a worker, the variables the outer job gave it are not settings", "[env]") {
  std::map<std::string, std::string> worker = {{"XLAUNCH_RUN_ID", "outer-1"},
                                               {"XLAUNCH_LOG_DIR", "/tmp/outer/run"},
                                               {"XLAUNCH_DISTRIBUTED_TYPE", "NO"},
                                               {"XLAUNCH_MIXED_PRECISION", "bf16"},
                                               {"XLAUNCH_NUM_PROCESSES", "2"}};
  std::vector<std::string> notices;
  const Settings inner = settings_from_env(env_of(worker), &notices);
  CHECK_FALSE(inner.log_dir);
  CHECK_FALSE(inner.distributed_type);
  CHECK_FALSE(inner.mixed_precision);
  CHECK(inner.num_processes == 2);  // set on purpose: the outer job exports no such variable
  REQUIRE(notices.size() == 3);
  CHECK(notices[0].find("ignored: it describes the xlaunch job 'outer-1'") != std::string::npos);
  // Outside a worker the same variables are the user's settings.
  worker.erase("XLAUNCH_RUN_ID");
  const Settings shell = settings_from_env(env_of(worker));
  CHECK(shell.log_dir == "/tmp/outer/run");
  CHECK(shell.distributed_type == DistributedType::No);
  CHECK(shell.mixed_precision == MixedPrecision::Bf16);
}
