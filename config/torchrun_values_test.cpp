#include "config/torchrun_values.hpp"

#include <catch2/catch.hpp>
#include <csignal>
#include <map>

#include "config/env_settings.hpp"
#include "config/flag_settings.hpp"
#include "config/schema.hpp"
#include "config/usage_error.hpp"

using namespace xlaunch;
using namespace xlaunch::config;

TEST_CASE("flag nnodes: N is N:N and MIN:MAX is a range and anything else is refused",
          "[torchrun]") {
  auto r = parse_nnodes("3", 100);
  REQUIRE(r);
  CHECK((r->min == 3 && r->max == 3));
  r = parse_nnodes(" 1:4 ", 100);
  REQUIRE(r);
  CHECK((r->min == 1 && r->max == 4));
  for (const char* bad : {"", "0", "0:2", "3:2", "1:2:3", "a:b", "1:", ":2", "-1:2", "1:101"}) {
    INFO(bad);
    CHECK_FALSE(parse_nnodes(bad, 100));
  }
}

TEST_CASE("flag nnodes through the schema fills num_machines and min/max_machines", "[torchrun]") {
  Settings fixed = settings_from_flags({{"num_machines", "2"}});
  CHECK(fixed.num_machines == 2);
  CHECK(fixed.min_machines == 2);
  CHECK(fixed.max_machines == 2);
  Settings range = settings_from_flags({{"num_machines", "1:3"}});
  CHECK(range.num_machines == 3);  // an elastic job plans for MAX machines
  CHECK(range.min_machines == 1);
  CHECK(range.max_machines == 3);
  CHECK(find_key("num_machines")->print(range) == "1:3");
  CHECK(find_key("num_machines")->print(fixed) == "2");
  // A higher source's fixed count replaces a lower one's range, and the other way round.
  Settings merged = merge(range, fixed);
  CHECK(merged.num_machines == 2);
  CHECK(merged.max_machines == 2);
  merged = merge(fixed, range);
  CHECK(merged.num_machines == 3);
  CHECK(merged.max_machines == 3);
}

TEST_CASE("flag nproc_per_node takes a number or auto/gpu/cpu - the higher source wins whole",
          "[torchrun]") {
  CHECK(parse_nproc_device("AUTO") == "auto");
  CHECK_FALSE(parse_nproc_device("xpu"));
  Settings device = settings_from_flags({{"nproc_per_node", "gpu"}});
  CHECK(device.nproc_per_node_device == "gpu");
  CHECK_FALSE(device.nproc_per_node);
  Settings number = settings_from_flags({{"nproc_per_node", "4"}});
  CHECK(number.nproc_per_node == 4);
  CHECK(merge(device, number).nproc_per_node == 4);
  CHECK_FALSE(merge(device, number).nproc_per_node_device);
  CHECK(merge(number, device).nproc_per_node_device == "gpu");
  CHECK_FALSE(merge(number, device).nproc_per_node);
  CHECK_THROWS_AS(settings_from_flags({{"nproc_per_node", "many"}}), UsageError);
}

TEST_CASE("auto/gpu/cpu count as torchrun does", "[torchrun]") {
  const std::vector<std::string> two{"0", "1"};
  CHECK(count_for_nproc_device("gpu", two, 16) == 2);
  CHECK(count_for_nproc_device("auto", two, 16) == 2);
  CHECK(count_for_nproc_device("auto", {}, 16) == 16);
  CHECK(count_for_nproc_device("cpu", two, 16) == 16);
  try {
    count_for_nproc_device("gpu", {}, 16);
    FAIL("gpu without GPUs must be refused");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()).find("GPUs found: none") != std::string::npos);
  }
}

TEST_CASE("flag rdzv_endpoint: host and host:port and v6:port - port 29400 by default",
          "[torchrun]") {
  auto e = parse_endpoint("node1");
  REQUIRE(e);
  CHECK((e->host == "node1" && e->port == 29400 && !e->port_given));
  e = parse_endpoint("10.0.0.2:1234");
  REQUIRE(e);
  CHECK((e->host == "10.0.0.2" && e->port == 1234 && e->port_given));
  e = parse_endpoint("[::1]:5000");
  REQUIRE(e);
  CHECK((e->host == "::1" && e->port == 5000));
  e = parse_endpoint("fe80::1");
  REQUIRE(e);
  CHECK((e->host == "fe80::1" && e->port == 29400));
  e = parse_endpoint("localhost:0");  // torchrun's --standalone: a free port
  REQUIRE(e);
  CHECK((e->host == "localhost" && e->port == 0 && e->port_given));
  for (const char* bad : {"", ":29400", "h:-1", "h:70000", "h:x", "[::1", "[::1]x", "a b:1"}) {
    INFO(bad);
    CHECK_FALSE(parse_endpoint(bad));
  }
}

TEST_CASE("flag rdzv_conf keys land in their settings - others are ignored, TLS refused",
          "[torchrun]") {
  Settings s;
  std::string problem;
  REQUIRE(parse_rdzv_conf(
      "join_timeout=600, last_call_timeout=30,close_timeout=10,read_timeout=60,is_host=1,", s,
      problem));
  CHECK(s.rdzv_timeout == 600);
  CHECK(s.rdzv_last_call_timeout == 30);
  CHECK(s.rdzv_close_timeout == 10);
  CHECK(s.rdzv_read_timeout == 60);
  CHECK(s.rdzv_is_host == true);
  CHECK(format_rdzv_conf(s) ==
        "last_call_timeout=30,close_timeout=10,read_timeout=60,is_host=true");
  Settings t;
  REQUIRE(parse_rdzv_conf("timeout=45", t, problem));
  CHECK(t.rdzv_timeout == 45);
  Settings u;
  std::vector<std::string> ignored;
  REQUIRE(parse_rdzv_conf("join_timeout=5,store_type=tcp, Use_Libuv = 0", u, problem, &ignored));
  CHECK(u.rdzv_timeout == 5);
  CHECK(ignored == std::vector<std::string>{"store_type=tcp", "use_libuv=0"});  // as torchrun
  Settings untouched;
  CHECK_FALSE(parse_rdzv_conf("join_timeout=5,protocol=https", untouched, problem));
  CHECK(problem.find("etcd over TLS is not supported") != std::string::npos);
  CHECK_FALSE(untouched.rdzv_timeout);  // all or nothing
  CHECK_FALSE(parse_rdzv_conf("cacert=/ca.pem", untouched, problem));
  CHECK(parse_rdzv_conf("protocol=HTTP", untouched, problem));
  CHECK_FALSE(parse_rdzv_conf("join_timeout", untouched, problem));
  CHECK_FALSE(parse_rdzv_conf("join_timeout=-1", untouched, problem));
  CHECK_FALSE(parse_rdzv_conf("is_host=maybe", untouched, problem));
}

TEST_CASE("flag signals_to_handle normalises names - xlaunch's own four are handled",
          "[torchrun]") {
  CHECK(normalize_signal_list("SIGTERM, usr1,SIGHUP") == "SIGTERM,SIGUSR1,SIGHUP");
  CHECK_FALSE(normalize_signal_list("SIGTERM,SIGNOPE"));
  CHECK_FALSE(normalize_signal_list("SIGTERM,"));
  CHECK(unhandled_signals("SIGTERM,SIGINT,SIGHUP,SIGQUIT").empty());
  CHECK(unhandled_signals("SIGTERM,SIGUSR1,SIGUSR2") ==
        std::vector<std::string>{"SIGUSR1", "SIGUSR2"});
  CHECK(signal_number("SIGUSR1") == SIGUSR1);
  CHECK(signal_number("SIGWINCH") == SIGWINCH);
  CHECK_FALSE(signal_number("SIGKILL"));  // not catchable: never handled or forwarded
  CHECK(parse_numa_binding("core-complex") == "core-complex");
  CHECK_FALSE(parse_numa_binding("nodes"));
}

TEST_CASE("PET_* variables are read as torchrun reads them", "[torchrun]") {
  std::map<std::string, std::string> vars{
      {"PET_NNODES", "2"},          {"PET_NPROC_PER_NODE", "auto"},
      {"PET_NODE_RANK", "1"},       {"PET_MASTER_ADDR", "head"},
      {"PET_MASTER_PORT", "23456"}, {"PET_MAX_RESTARTS", "3"},
      {"PET_RDZV_ID", "job7"},      {"PET_RDZV_CONF", "last_call_timeout=9"},
      {"PET_ROLE", "trainer"},      {"PET_VIRTUAL_LOCAL_RANK", "1"},
      {"PET_LOG_DIR", ""}};
  auto getenv = [&](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
  Settings s = settings_from_pet_env(getenv);
  CHECK(s.num_machines == 2);
  CHECK(s.nproc_per_node_device == "auto");
  CHECK(s.machine_rank == 1);
  CHECK(s.main_process_ip == "head");
  CHECK(s.main_process_port == 23456);
  CHECK(s.max_restarts == 3);
  CHECK(s.rdzv_id == "job7");
  CHECK(s.rdzv_last_call_timeout == 9);
  CHECK(s.role == "trainer");
  CHECK(s.virtual_local_rank == true);
  CHECK_FALSE(s.log_dir);  // empty is unset
  vars = {{"PET_NNODES", "two"}, {"PET_VIRTUAL_LOCAL_RANK", "yes"}};
  try {
    settings_from_pet_env(getenv);
    FAIL("bad PET_* values must be refused");
  } catch (const UsageError& e) {
    const std::string what = e.what();
    CHECK(what.find("PET_NNODES: bad value 'two'") != std::string::npos);
    CHECK(what.find("PET_VIRTUAL_LOCAL_RANK: bad value 'yes' (allowed: 0 or 1)") !=
          std::string::npos);
  }
  // Every PET_* variable names a real key.
  for (const PetVariable& v : pet_variables()) CHECK(find_key(v.key) != nullptr);
}

TEST_CASE("XLAUNCH_* variables that are no setting are named and with a suggestion", "[torchrun]") {
  const auto warnings = unknown_xlaunch_variables({"XLAUNCH_NUM_PROCESS", "XLAUNCH_NUM_PROCESSES",
                                                   "XLAUNCH_CONFIG_FILE", "XLAUNCH_ZZZZZZZZZZ",
                                                   "PATH", "XLAUNCH_RUN_ID"});
  REQUIRE(warnings.size() == 2);
  CHECK(warnings[0] ==
        "XLAUNCH_NUM_PROCESS is not an xlaunch variable; it has no effect (did you mean "
        "XLAUNCH_NUM_PROCESSES?)");
  CHECK(warnings[1] == "XLAUNCH_ZZZZZZZZZZ is not an xlaunch variable; it has no effect");
}
