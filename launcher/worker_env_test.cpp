#include "launcher/worker_env.hpp"

#include <catch2/catch.hpp>

using namespace xlaunch;
using namespace xlaunch::launcher;

TEST_CASE("every worker gets torchrun's full environment", "[env]") {
  LaunchPlan plan;
  plan.local_world_size = 4;
  plan.world_size = 8;
  plan.num_machines = 2;
  plan.machine_rank = 1;
  plan.rank_offset = 4;
  plan.master_addr = "10.1.2.3";
  plan.master_port = 29511;
  plan.run_id = "r1";
  plan.max_restarts = 3;
  plan.mixed_precision = config::MixedPrecision::Bf16;
  plan.distributed_type = config::DistributedType::MultiGpu;
  plan.gpus = {"5", "7", "GPU-abc", "MIG-x"};
  Environment parent{{"PATH", "/bin"}, {"HOME", "/root"}};
  Environment env =
      worker_environment(parent, plan, 2, 1, {"/logs/r1/attempt_1/rank_6/error.json", "/logs/r1"});

  CHECK(env["RANK"] == "6");
  CHECK(env["LOCAL_RANK"] == "2");
  CHECK(env["GROUP_RANK"] == "1");
  CHECK(env["ROLE_RANK"] == "6");
  CHECK(env["ROLE_NAME"] == "default");
  CHECK(env["LOCAL_WORLD_SIZE"] == "4");
  CHECK(env["WORLD_SIZE"] == "8");
  CHECK(env["GROUP_WORLD_SIZE"] == "2");
  CHECK(env["ROLE_WORLD_SIZE"] == "8");
  CHECK(env["MASTER_ADDR"] == "10.1.2.3");
  CHECK(env["MASTER_PORT"] == "29511");
  CHECK(env["TORCHELASTIC_RESTART_COUNT"] == "1");
  CHECK(env["TORCHELASTIC_MAX_RESTARTS"] == "3");
  CHECK(env["TORCHELASTIC_RUN_ID"] == "r1");
  CHECK(env["TORCHELASTIC_USE_AGENT_STORE"] == "True");
  CHECK(env["TORCHELASTIC_ERROR_FILE"] == "/logs/r1/attempt_1/rank_6/error.json");
  CHECK(env["OMP_NUM_THREADS"] == "1");
  CHECK(env["ACCELERATE_MIXED_PRECISION"] == "bf16");
  CHECK(env["XLAUNCH_MIXED_PRECISION"] == "bf16");
  CHECK(env["XLAUNCH_DISTRIBUTED_TYPE"] == "MULTI_GPU");
  CHECK(env["XLAUNCH_RUN_ID"] == "r1");
  CHECK(env["XLAUNCH_LOG_DIR"] == "/logs/r1");
  CHECK(env["CUDA_VISIBLE_DEVICES"] == "5,7,GPU-abc,MIG-x");
  CHECK(env["PATH"] == "/bin");  // the launcher's own environment is kept
}

TEST_CASE("OMP_NUM_THREADS and CUDA_VISIBLE_DEVICES set by the user are kept", "[env]") {
  LaunchPlan plan;  // CPU job
  Environment parent{{"OMP_NUM_THREADS", "8"}, {"CUDA_VISIBLE_DEVICES", ""}};
  CHECK_FALSE(omp_threads_defaulted(parent, plan));
  Environment env = worker_environment(parent, plan, 0, 0, {"e", "d"});
  CHECK(env["OMP_NUM_THREADS"] == "8");
  CHECK(env["CUDA_VISIBLE_DEVICES"].empty());
  CHECK(env["ACCELERATE_MIXED_PRECISION"] == "no");
  CHECK(env["XLAUNCH_DISTRIBUTED_TYPE"] == "NO");
}

TEST_CASE("torchrun's flags in the environment: role and NCCL async errors and virtual local rank",
          "[env]") {
  LaunchPlan plan;
  plan.local_world_size = 2;
  plan.world_size = 2;
  plan.gpus = {"4", "6"};
  plan.role = "trainer";
  Environment env = worker_environment({}, plan, 1, 0, {"/e", "/r"});
  CHECK(env["ROLE_NAME"] == "trainer");
  CHECK(env["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "1");
  CHECK(env["NCCL_ASYNC_ERROR_HANDLING"] == "1");
  CHECK(env["LOCAL_RANK"] == "1");
  CHECK(env["CUDA_VISIBLE_DEVICES"] == "4,6");

  Environment parent{{"TORCH_NCCL_ASYNC_ERROR_HANDLING", "0"}, {"NCCL_ASYNC_ERROR_HANDLING", "3"}};
  plan.virtual_local_rank = true;
  env = worker_environment(parent, plan, 1, 0, {"/e", "/r"});
  CHECK(env["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "0");  // the user's choice stays
  CHECK(env["NCCL_ASYNC_ERROR_HANDLING"] == "3");
  CHECK(env["LOCAL_RANK"] == "0");
  CHECK(env["RANK"] == "1");
  CHECK(env["CUDA_VISIBLE_DEVICES"] == "6");
}
