#include "launcher/launch_plan.hpp"

#include <catch2/catch.hpp>
#include <csignal>

#include "config/schema.hpp"
#include "config/usage_error.hpp"

using namespace xlaunch;
using namespace xlaunch::launcher;
using Strings = std::vector<std::string>;

namespace {
LaunchPlan plan_for(const config::Settings& s, const Strings& visible = {}) {
  return make_plan(s, {"/bin/true"}, visible, "run1");
}
}  // namespace

TEST_CASE("default worker count: one per selected GPU and else 1", "[plan]") {
  CHECK(plan_for({}).local_world_size == 1);
  CHECK(plan_for({}, {"0", "1", "2"}).local_world_size == 3);
  config::Settings s;
  s.gpu_ids = "1,2";
  LaunchPlan p = plan_for(s, {"4", "5", "6", "7"});
  CHECK(p.local_world_size == 2);
  CHECK(p.gpus == Strings{"5", "6"});
  CHECK(p.distributed_type == config::DistributedType::MultiGpu);
}

TEST_CASE("N CPU workers run without GPUs", "[plan]") {
  config::Settings s;
  s.num_processes = 4;
  LaunchPlan p = plan_for(s);
  CHECK(p.local_world_size == 4);
  CHECK(p.world_size == 4);
  CHECK(p.gpus.empty());
  CHECK(p.distributed_type == config::DistributedType::MultiCpu);
}

TEST_CASE("worker counts below 1 are usage errors", "[plan]") {
  config::Settings s;
  s.num_processes = 0;
  CHECK_THROWS_WITH(plan_for(s), Catch::Contains("--num_processes must be at least 1"));
  s.num_processes = -2;
  CHECK_THROWS_AS(plan_for(s), UsageError);
}

TEST_CASE("more GPU workers than GPUs share them, as under torchrun, with a warning", "[plan]") {
  config::Settings s;
  s.num_processes = 4;
  const LaunchPlan shared = plan_for(s, {"6", "7"});
  CHECK(shared.local_world_size == 4);
  CHECK(shared.gpus == Strings{"6", "7"});
  CHECK(shared_gpus_warning(shared) ==
        "4 GPU workers share 2 GPU(s) on this machine (6,7): local ranks 2 to 3 have no GPU of "
        "their own, so torch.cuda.set_device(LOCAL_RANK) fails there and NCCL refuses two ranks "
        "on one GPU; use --num_processes 2 for one worker per GPU, or --use_cpu for CPU workers");
  s.num_processes = 2;
  CHECK_THAT(*shared_gpus_warning(plan_for(s, {"0"})),
             Catch::StartsWith("2 GPU workers share 1 GPU(s) on this machine (0): local rank 1 "
                               "has no GPU of its own"));
  CHECK_FALSE(shared_gpus_warning(plan_for(s, {"0", "1"})));
  CHECK_FALSE(shared_gpus_warning(plan_for(s, {"0", "1", "2"})));
  s.use_cpu = true;
  CHECK(plan_for(s, {"6", "7"}).gpus.empty());
  CHECK_FALSE(shared_gpus_warning(plan_for(s, {"6", "7"})));
}

TEST_CASE("fewer workers than GPUs use the first ones - DP uses all in one process", "[plan]") {
  config::Settings s;
  s.num_processes = 2;
  CHECK(plan_for(s, {"0", "1", "2", "3"}).gpus == Strings{"0", "1"});
  config::Settings dp;
  dp.distributed_type = config::DistributedType::DataParallel;
  LaunchPlan p = plan_for(dp, {"0", "1", "2", "3"});
  CHECK(p.local_world_size == 1);
  CHECK(p.gpus.size() == 4);
  dp.num_processes = 2;
  CHECK_THROWS_WITH(plan_for(dp, {"0", "1"}), Catch::Contains("one process per machine"));
}

TEST_CASE("machine layout gives each machine its rank offset", "[plan]") {
  config::Settings s;
  s.num_processes = 8;
  s.num_machines = 2;
  s.machine_rank = 1;
  LaunchPlan p = plan_for(s);
  CHECK(p.local_world_size == 4);
  CHECK(p.world_size == 8);
  CHECK(p.rank_offset == 4);
  s.num_processes = 7;
  CHECK_THROWS_WITH(plan_for(s), Catch::Contains("does not divide evenly"));
  s.num_processes = 8;
  s.machine_rank = 2;
  CHECK_THROWS_WITH(plan_for(s), Catch::Contains("--machine_rank 2 is out of range"));
}

TEST_CASE("console filters and redirects", "[plan]") {
  config::Settings s;
  s.num_processes = 3;
  s.local_ranks_filter = "0,2";
  s.redirects = "1:3";
  LaunchPlan p = plan_for(s);
  CHECK(*p.console_ranks == std::set<int>{0, 2});
  CHECK(p.console_streams[0].stdout_shown);
  CHECK_FALSE(p.console_streams[1].stdout_shown);
  CHECK_FALSE(p.console_streams[1].stderr_shown);
  s.local_ranks_filter = "5";
  CHECK_THROWS_WITH(plan_for(s), Catch::Contains("--local_ranks_filter"));
}

TEST_CASE("ports and timeouts and restarts are checked", "[plan]") {
  config::Settings s;
  s.main_process_port = 70000;
  CHECK_THROWS_WITH(plan_for(s), Catch::Contains("is not a TCP port"));
  s.main_process_port = 29500;
  CHECK(plan_for(s).master_port == 29500);
  s.term_timeout = -1;
  CHECK_THROWS_AS(plan_for(s), UsageError);
  s.term_timeout = 0.25;
  CHECK(plan_for(s).term_timeout == std::chrono::milliseconds(250));
  s.term_timeout = 9223372037.0;  // seconds whose nanoseconds overflow a 64-bit clock
  CHECK_THROWS_WITH(plan_for(s), Catch::Contains("--term_timeout must be 0 to 1000000 seconds"));
  s.term_timeout = 1e6;
  CHECK(plan_for(s).term_timeout == std::chrono::seconds(1'000'000));
  s.term_timeout = std::nullopt;
  s.max_restarts = -1;
  CHECK_THROWS_AS(plan_for(s), UsageError);
}

TEST_CASE("run ids sort by time", "[plan]") {
  using namespace std::chrono;
  auto t = sys_days{year{2026} / 11 / 21} + hours{23} + minutes{5} + seconds{9};
  CHECK(make_run_id(t, 0xabcdef) == "20261121-230509-abcdef");
}

TEST_CASE("generated run ids pass the run id rule - a bad given one is refused", "[plan]") {
  using namespace std::chrono;
  for (std::uint32_t random : {0u, 1u, 0xffffffu, 0xffffffffu}) {
    CHECK(config::is_valid_run_id(make_run_id(system_clock::now(), random)));
  }
  CHECK(config::is_valid_run_id(make_run_id(system_clock::time_point{}, 7)));
  config::Settings s;
  CHECK(make_plan(s, {"/bin/true"}, {}, "fresh-id").run_id == "fresh-id");
  CHECK_THROWS_WITH(make_plan(s, {"/bin/true"}, {}, "a/../b"),
                    Catch::Contains("'a/../b' is not a valid run id"));
  s.rdzv_id = "../victim";
  CHECK_THROWS_AS(plan_for(s), UsageError);
}

TEST_CASE("flag nproc_per_node auto|gpu|cpu counts the selected GPUs or the CPUs", "[plan]") {
  config::Settings s;
  s.nproc_per_node_device = "gpu";
  CHECK(plan_for(s, {"0", "1", "2"}).local_world_size == 3);
  s.gpu_ids = "0,2";
  CHECK(plan_for(s, {"0", "1", "2"}).local_world_size == 2);
  CHECK_THROWS_AS(plan_for(s, {}), UsageError);
  config::Settings a;
  a.nproc_per_node_device = "auto";
  CHECK(plan_for(a, {"5"}).local_world_size == 1);
  CHECK(plan_for(a, {}).local_world_size >= 1);  // the CPUs
  config::Settings c;
  c.nproc_per_node_device = "cpu";
  CHECK_THROWS_AS(plan_for(c, {"0"}), UsageError);  // GPUs in use: say --cpu
  c.use_cpu = true;
  const LaunchPlan p = plan_for(c, {"0"});
  CHECK(p.gpus.empty());
  CHECK(p.local_world_size >= 1);
}

TEST_CASE("MULTI_GPU with no GPU visible is a usage error and not CPU workers", "[plan]") {
  config::Settings s;
  s.distributed_type = config::DistributedType::MultiGpu;
  s.num_processes = 2;
  try {
    plan_for(s, {});
    FAIL("MULTI_GPU without GPUs must be refused");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()).find("no GPU is visible (GPUs found: none)") != std::string::npos);
  }
  s.use_cpu = true;
  CHECK(plan_for(s, {}).local_world_size == 2);
}

TEST_CASE("flag role and --virtual_local_rank reach the plan", "[plan]") {
  config::Settings s;
  s.role = "trainer";
  s.virtual_local_rank = true;
  const LaunchPlan p = plan_for(s);
  CHECK(p.role == "trainer");
  CHECK(p.virtual_local_rank);
  CHECK(plan_for({}).role == "default");
}

TEST_CASE("stall settings: defaults, off, stop, and bounds", "[plan]") {
  config::Settings s;
  LaunchPlan p = plan_for(s);
  CHECK(p.stall_timeout == std::chrono::seconds(300));
  CHECK_FALSE(p.stop_on_stall);
  CHECK(p.python_stacks);
  s.stall_timeout = 0;  // off
  s.on_stall = "stop";
  s.python_stacks = false;
  p = plan_for(s);
  CHECK(p.stall_timeout.count() == 0);
  CHECK(p.stop_on_stall);
  CHECK_FALSE(p.python_stacks);
  s.stall_timeout = 2.5;
  CHECK(plan_for(s).stall_timeout == std::chrono::milliseconds(2500));
  s.stall_timeout = 1e7;
  CHECK_THROWS_WITH(plan_for(s), Catch::Contains("--stall_timeout must be 0 (off) to 1000000"));
}

TEST_CASE("signals named beyond the four stop signals are forwarded to the workers", "[plan]") {
  CHECK(plan_for({}).forwarded_signals.empty());
  config::Settings s;
  s.signals_to_handle = "SIGTERM,SIGINT,SIGUSR1,SIGUSR2";
  CHECK(plan_for(s).forwarded_signals == std::vector<int>{SIGUSR1, SIGUSR2});
  s.signals_to_handle = "SIGTERM,SIGINT,SIGHUP,SIGQUIT";
  CHECK(plan_for(s).forwarded_signals.empty());
}

TEST_CASE("output kept off the console: a redirected stream no tee shows", "[plan]") {
  LaunchPlan plan;
  plan.console_streams.assign(2, config::ConsoleStreams{});
  CHECK_FALSE(output_off_console(plan));
  plan.console_streams[1].stderr_shown = false;
  CHECK(output_off_console(plan));
}
