#include "cluster/detect.hpp"

#include <catch2/catch.hpp>

#include "config/usage_error.hpp"

using namespace xlaunch;
using namespace xlaunch::cluster;

TEST_CASE("managers are tried in order; SLURM wins over the PMI variables it sets", "[cluster]") {
  Environment srun_pmi2{{"SLURM_STEP_ID", "0"}, {"SLURM_STEP_NUM_NODES", "2"},
                        {"SLURM_NODEID", "1"},  {"SLURM_STEP_NODELIST", "n[1-2]"},
                        {"PMI_SIZE", "2"},      {"PMI_RANK", "1"}};
  CHECK(detect_cluster(srun_pmi2).scheduler == "SLURM");
  CHECK(detect_cluster({{"PMI_SIZE", "2"}, {"PMI_RANK", "1"}}).scheduler == "PMI");
  CHECK(detect_cluster({{"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "0"}}).scheduler ==
        "Open MPI");
  CHECK(detect_cluster({{"PET_NNODES", "2"}, {"PET_NODE_RANK", "0"}}).scheduler == "PyTorchJob");
  CHECK(detect_cluster({}).scheduler.empty());
}

TEST_CASE("flags win over the scheduler", "[cluster]") {
  Environment env{{"SLURM_STEPID", "0"},
                  {"SLURM_NNODES", "2"},
                  {"SLURM_NODEID", "1"},
                  {"SLURM_NODELIST", "n[1-2]"}};
  config::Settings flags;
  flags.main_process_ip = "10.0.0.5";
  config::Settings s = apply_cluster(flags, detect_cluster(env));
  CHECK(s.main_process_ip == "10.0.0.5");
  CHECK(s.num_machines == 2);
  CHECK(s.machine_rank == 1);
}

TEST_CASE("a refused detection is a usage error with its hint", "[cluster]") {
  ClusterDetection found;
  found.scheduler = "SLURM";
  found.refusal = "two launchers";
  found.hint = "srun --ntasks-per-node=1";
  try {
    apply_cluster({}, found);
    FAIL("no UsageError");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()) == "two launchers");
    CHECK(e.hint() == "srun --ntasks-per-node=1");
  }
  CHECK(describe(found).find("error: two launchers (srun --ntasks-per-node=1)") !=
        std::string::npos);
}

TEST_CASE("describe starts with the scheduler's name, for 'cluster: NAME'", "[cluster]") {
  ClusterDetection found = detect_cluster({{"SLURM_STEP_ID", "0"},
                                           {"SLURM_STEP_NUM_NODES", "2"},
                                           {"SLURM_NODEID", "1"},
                                           {"SLURM_STEP_NODELIST", "node[1-2]"}});
  CHECK(describe(found) == "SLURM\n  num_machines: 2\n  machine_rank: 1\n  main_process_ip: node1");
  CHECK(describe({}).rfind("none detected", 0) == 0);
}
