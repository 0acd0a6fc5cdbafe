#include "cluster/detect.hpp"

#include <catch2/catch.hpp>

using namespace xlaunch;
using namespace xlaunch::cluster;

TEST_CASE("an srun step gives machines, rank and machine 0's host", "[cluster]") {
  Environment env{{"SLURM_STEP_ID", "0"},
                  {"SLURM_NNODES", "4"},
                  {"SLURM_NODEID", "2"},
                  {"SLURM_JOB_NODELIST", "gpu[07-08,11],gpu20"}};
  ClusterDetection found = detect_cluster(env);
  CHECK(found.scheduler == "SLURM");
  CHECK(found.settings.num_machines == 4);
  CHECK(found.settings.machine_rank == 2);
  CHECK(found.settings.main_process_ip == "gpu07");
  CHECK(describe(found).find("machine_rank: 2") != std::string::npos);
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

TEST_CASE("an salloc shell (no step) is not a multi-machine launch", "[cluster]") {
  Environment env{{"SLURM_NNODES", "2"}, {"SLURM_NODEID", "0"}, {"SLURM_JOB_NODELIST", "n[1-2]"}};
  CHECK(detect_cluster(env).scheduler.empty());
  CHECK(detect_cluster({}).scheduler.empty());
}

TEST_CASE("a bad hostlist is a note, not a guess", "[cluster]") {
  Environment env{{"SLURM_STEP_ID", "1"},
                  {"SLURM_NNODES", "2"},
                  {"SLURM_NODEID", "0"},
                  {"SLURM_JOB_NODELIST", "n[1-"}};
  ClusterDetection found = detect_cluster(env);
  CHECK(found.scheduler == "SLURM");
  CHECK_FALSE(found.settings.main_process_ip);
  REQUIRE(found.notes.size() == 1);
  CHECK(found.notes[0].find("--main_process_ip") != std::string::npos);
}

TEST_CASE("Open MPI and PMI ranks", "[cluster]") {
  ClusterDetection ompi = detect_cluster({{"OMPI_COMM_WORLD_SIZE", "3"},
                                          {"OMPI_COMM_WORLD_RANK", "1"},
                                          {"MASTER_ADDR", "head"},
                                          {"MASTER_PORT", "29400"}});
  CHECK(ompi.scheduler == "Open MPI");
  CHECK(ompi.settings.num_machines == 3);
  CHECK(ompi.settings.machine_rank == 1);
  CHECK(ompi.settings.main_process_ip == "head");
  CHECK(ompi.settings.main_process_port == 29400);
  ClusterDetection pmi = detect_cluster({{"PMI_SIZE", "2"}, {"PMI_RANK", "0"}});
  CHECK(pmi.scheduler == "PMI");
  CHECK(pmi.settings.num_machines == 2);
  CHECK_FALSE(pmi.settings.main_process_ip);
  ClusterDetection junk = detect_cluster({{"PMI_SIZE", "two"}, {"PMI_RANK", "0"}});
  CHECK(junk.scheduler.empty());
}
