#include "config/join_settings.hpp"

#include <catch2/catch.hpp>

#include "config/usage_error.hpp"

using namespace xlaunch;
using namespace xlaunch::config;
using std::chrono::milliseconds;

namespace {

template <typename F>
std::string usage_error_of(F&& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("MIN < MAX machines make a job elastic, MIN == MAX does not", "[join]") {
  Settings s;
  s.min_machines = 2;
  s.max_machines = 4;
  JoinSettings join = join_settings(s);
  CHECK(join.elastic);
  CHECK(join.min_machines == 2);
  CHECK(join.max_machines == 4);
  s.min_machines = 4;
  join = join_settings(s);
  CHECK_FALSE(join.elastic);
  CHECK(join.min_machines == 0);
  CHECK(join.max_machines == 0);
  CHECK_FALSE(join_settings(Settings{}).elastic);
}

TEST_CASE("the elastic store's host: machine rank 0, else the launcher without an address",
          "[join]") {
  Settings s;
  CHECK(join_settings(s).hosts_elastic_store);
  s.main_process_ip = "10.0.0.1";
  CHECK_FALSE(join_settings(s).hosts_elastic_store);
  s.machine_rank = 0;
  CHECK(join_settings(s).hosts_elastic_store);
  s.machine_rank = 1;
  s.main_process_ip.reset();
  CHECK_FALSE(join_settings(s).hosts_elastic_store);
}

TEST_CASE("etcd and etcd-v2 meet in etcd, static and c10d do not", "[join]") {
  Settings s;
  CHECK_FALSE(join_settings(s).etcd);
  for (const char* backend : {"etcd", "etcd-v2"}) {
    s.rdzv_backend = backend;
    CHECK(join_settings(s).etcd);
  }
  for (const char* backend : {"static", "c10d"}) {
    s.rdzv_backend = backend;
    CHECK_FALSE(join_settings(s).etcd);
  }
}

TEST_CASE("the join's keys and the job's total processes", "[join]") {
  Settings s;
  CHECK(join_settings(s).rdzv_id == "default");
  CHECK_FALSE(join_settings(s).total_processes);
  s.rdzv_id = "job7";
  s.num_processes = 8;
  CHECK(join_settings(s).rdzv_id == "job7");
  CHECK(join_settings(s).total_processes == 8);
  s.nproc_per_node = 4;  // per machine: the total follows from the machines that join
  CHECK_FALSE(join_settings(s).total_processes);
}

TEST_CASE("etcd's endpoint: port 2379 by default, IPv6 in brackets, an address required",
          "[join]") {
  Settings s;
  s.main_process_ip = "etcd.example";
  CHECK(etcd_endpoint(s) == "etcd.example:2379");
  s.main_process_port = 0;
  CHECK(etcd_endpoint(s) == "etcd.example:2379");
  s.main_process_port = 12379;
  CHECK(etcd_endpoint(s) == "etcd.example:12379");
  s.main_process_ip = "fd00::1";
  CHECK(etcd_endpoint(s) == "[fd00::1]:12379");
  s.main_process_ip = "";
  CHECK(usage_error_of([&] { etcd_endpoint(s); }) == "--rdzv_backend etcd needs etcd's address");
  s.main_process_ip.reset();
  CHECK(usage_error_of([&] { etcd_endpoint(s); }) == "--rdzv_backend etcd needs etcd's address");
}

TEST_CASE("the join's timeouts: defaults, given values, and values that are no duration",
          "[join]") {
  Settings s;
  JoinTimeouts t = join_timeouts(s);
  CHECK(t.rdzv == milliseconds(900'000));
  CHECK(t.heartbeat == milliseconds(30'000));
  CHECK(t.last_call == milliseconds(30'000));
  CHECK(t.heartbeat_seconds == 30);
  s.rdzv_timeout = 1.5;
  s.heartbeat_timeout = 2.25;
  s.rdzv_last_call_timeout = 0.5;
  t = join_timeouts(s);
  CHECK(t.rdzv == milliseconds(1500));
  CHECK(t.heartbeat == milliseconds(2250));
  CHECK(t.last_call == milliseconds(500));
  CHECK(t.heartbeat_seconds == 2.25);
  s.rdzv_timeout = 0;
  CHECK(usage_error_of([&] { join_timeouts(s); }) ==
        "--rdzv_timeout must be a number of seconds > 0 (got 0)");
  s.rdzv_timeout = 1;
  s.heartbeat_timeout = -1;
  CHECK(usage_error_of([&] { join_timeouts(s); }) ==
        "--heartbeat_timeout must be a number of seconds > 0 (got -1)");
}
