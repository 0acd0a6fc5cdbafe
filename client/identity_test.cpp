// Environment parsing of World (no processes, no store).
#include "client/identity.hpp"

#include <catch2/catch.hpp>
#include <map>
#include <string>

using namespace xlaunch;
using namespace xlaunch::detail;

namespace {

using Vars = std::map<std::string, std::string>;

EnvLookup lookup(const Vars& vars) {
  return [vars](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

Vars launcher_env() {
  return {{"RANK", "5"},
          {"WORLD_SIZE", "8"},
          {"LOCAL_RANK", "1"},
          {"LOCAL_WORLD_SIZE", "4"},
          {"GROUP_RANK", "1"},
          {"MASTER_ADDR", "10.0.0.1"},
          {"MASTER_PORT", "29500"},
          {"XLAUNCH_RUN_ID", "job7"},
          {"TORCHELASTIC_RESTART_COUNT", "2"},
          {"CUDA_VISIBLE_DEVICES", "4,5"}};
}

// The message of the Error parse_identity throws for `vars`.
std::string failure(const Vars& vars) {
  try {
    parse_identity(lookup(vars));
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::environment);
    CHECK(e.rank() == -1);
    return e.what();
  }
  FAIL("parse_identity accepted the environment");
  return {};
}

}  // namespace

TEST_CASE("the launcher's environment gives the identity", "[client][env]") {
  Identity id = parse_identity(lookup(launcher_env()));
  CHECK(id.rank == 5);
  CHECK(id.size == 8);
  CHECK(id.local_rank == 1);
  CHECK(id.local_size == 4);
  CHECK(id.node_rank == 1);
  CHECK(id.master_addr == "10.0.0.1");
  CHECK(id.master_port == 29500);
  CHECK(id.run_id == "job7");
  CHECK(id.restart_count == 2);
  CHECK(id.cuda_visible_devices == std::optional<std::string>("4,5"));
  CHECK_FALSE(id.timeout);
  CHECK_FALSE(id.gloo_ifname);
}

TEST_CASE("a program run by hand may set only the four required variables", "[client][env]") {
  Identity id = parse_identity(lookup(
      {{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "localhost"}, {"MASTER_PORT", "1"}}));
  CHECK(id.local_rank == 1);
  CHECK(id.local_size == 2);
  CHECK(id.node_rank == 0);
  CHECK(id.run_id == "default");
  CHECK(id.restart_count == 0);
  CHECK_FALSE(id.cuda_visible_devices);
}

TEST_CASE("no launcher variables at all says so", "[client][env]") {
  std::string message = failure({});
  CHECK_THAT(message, Catch::Contains("not started by a launcher"));
  CHECK_THAT(message, Catch::Contains("xlaunch launch"));
}

TEST_CASE("a missing required variable is named", "[client][env]") {
  Vars vars = launcher_env();
  vars.erase("MASTER_PORT");
  CHECK_THAT(failure(vars), Catch::Contains("MASTER_PORT unset"));
}

TEST_CASE("malformed and inconsistent values name the variable and value", "[client][env]") {
  auto with = [](const char* name, const char* value) {
    Vars vars = launcher_env();
    vars[name] = value;
    return vars;
  };
  CHECK_THAT(failure(with("RANK", "abc")), Catch::Contains("RANK='abc' is not an integer"));
  CHECK_THAT(failure(with("RANK", "3x")), Catch::Contains("RANK='3x'"));
  CHECK_THAT(failure(with("RANK", "")), Catch::Contains("RANK=''"));
  CHECK_THAT(failure(with("RANK", "8")), Catch::Contains("RANK=8 is not below WORLD_SIZE=8"));
  CHECK_THAT(failure(with("WORLD_SIZE", "0")), Catch::Contains("WORLD_SIZE=0 is out of range"));
  CHECK_THAT(failure(with("RANK", "99999999999999999999")),
             Catch::Contains("RANK=99999999999999999999 is out of range"));
  CHECK_THAT(failure(with("LOCAL_RANK", "4")),
             Catch::Contains("LOCAL_RANK=4 is not below LOCAL_WORLD_SIZE=4"));
  CHECK_THAT(failure(with("LOCAL_WORLD_SIZE", "9")),
             Catch::Contains("LOCAL_WORLD_SIZE=9 exceeds WORLD_SIZE=8"));
  CHECK_THAT(failure(with("MASTER_PORT", "70000")), Catch::Contains("MASTER_PORT=70000"));
  CHECK_THAT(failure(with("MASTER_ADDR", "")), Catch::Contains("MASTER_ADDR is empty"));
  CHECK_THAT(failure(with("TORCHELASTIC_RESTART_COUNT", "-1")),
             Catch::Contains("TORCHELASTIC_RESTART_COUNT=-1"));
  CHECK_THAT(failure(with("RANK", "99999999999999999999")), Catch::Contains("RANK="));
  CHECK_THAT(failure(with("XLAUNCH_CLIENT_TIMEOUT", "0")),
             Catch::Contains("XLAUNCH_CLIENT_TIMEOUT='0'"));
  CHECK_THAT(failure(with("XLAUNCH_CLIENT_TIMEOUT", "soon")),
             Catch::Contains("XLAUNCH_CLIENT_TIMEOUT='soon'"));
}

TEST_CASE("run id falls back from XLAUNCH_RUN_ID to TORCHELASTIC_RUN_ID", "[client][env]") {
  Vars vars = launcher_env();
  vars.erase("XLAUNCH_RUN_ID");
  vars["TORCHELASTIC_RUN_ID"] = "elastic9";
  CHECK(parse_identity(lookup(vars)).run_id == "elastic9");
  vars["XLAUNCH_RUN_ID"] = "";  // empty counts as unset
  CHECK(parse_identity(lookup(vars)).run_id == "elastic9");
}

TEST_CASE("optional knobs: client timeout and Gloo interface", "[client][env]") {
  Vars vars = launcher_env();
  vars["XLAUNCH_CLIENT_TIMEOUT"] = "2.5";
  vars["GLOO_SOCKET_IFNAME"] = "eth1,eth2";
  Identity id = parse_identity(lookup(vars));
  CHECK(id.timeout == std::optional<std::chrono::milliseconds>(2500));
  CHECK(id.gloo_ifname == std::optional<std::string>("eth1"));
  vars["XLAUNCH_CLIENT_TIMEOUT"] = "0.0004";  // positive, so at least a millisecond, not 0
  CHECK(parse_identity(lookup(vars)).timeout == std::optional<std::chrono::milliseconds>(1));
}

TEST_CASE("errors carry the rank context and the cause", "[client][error]") {
  Identity id = parse_identity(lookup(launcher_env()));
  Error e = make_error(ErrorKind::cuda, &id, "nccl_comm", "no GPU", "use gloo");
  CHECK(e.rank() == 5);
  CHECK(e.kind() == ErrorKind::cuda);
  CHECK(e.cause() == "no GPU");
  std::string what = e.what();
  CHECK_THAT(what, Catch::StartsWith("xlaunch: error: [rank 5/8 local 1 "));
  CHECK_THAT(what, Catch::Contains(" pid "));
  CHECK_THAT(what, Catch::EndsWith("nccl_comm: no GPU (hint: use gloo)"));
  CHECK_THAT(context_tag(nullptr), Catch::StartsWith("[pid "));
}

TEST_CASE("a rank uses its local rank within the visible GPUs", "[client][env]") {
  CHECK(cuda_device_for(0, 1) == std::optional<int>(0));
  CHECK(cuda_device_for(3, 4) == std::optional<int>(3));
  CHECK_FALSE(cuda_device_for(1, 1));
  CHECK_FALSE(cuda_device_for(0, 0));
}
