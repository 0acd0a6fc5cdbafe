#include "cluster/pytorchjob.hpp"

#include <catch2/catch.hpp>

using namespace xlaunch;
using namespace xlaunch::cluster;

TEST_CASE("a PyTorchJob pod's PET_* variables", "[pytorchjob]") {
  std::optional<ClusterDetection> found = detect_pytorchjob({{"PET_NNODES", "2"},
                                                             {"PET_NODE_RANK", "1"},
                                                             {"PET_NPROC_PER_NODE", "4"},
                                                             {"PET_MASTER_ADDR", "job-master-0"},
                                                             {"PET_MASTER_PORT", "23456"},
                                                             {"MASTER_ADDR", "other"},
                                                             {"RANK", "0"}});
  REQUIRE(found);
  CHECK(found->scheduler == "PyTorchJob");
  CHECK(found->settings.num_machines == 2);
  CHECK(found->settings.machine_rank == 1);
  CHECK(found->settings.main_process_ip == "job-master-0");
  CHECK(found->settings.main_process_port == 23456);
  CHECK(found->settings.nproc_per_node == 4);
  CHECK(found->notes.empty());
}

TEST_CASE("PyTorchJob falls back to MASTER_ADDR, MASTER_PORT and RANK", "[pytorchjob]") {
  std::optional<ClusterDetection> found = detect_pytorchjob({{"PET_NNODES", "3:3"},
                                                             {"PET_NPROC_PER_NODE", "auto"},
                                                             {"MASTER_ADDR", "job-master-0"},
                                                             {"MASTER_PORT", "23456"},
                                                             {"RANK", "2"}});
  REQUIRE(found);
  CHECK(found->settings.num_machines == 3);
  CHECK(found->settings.machine_rank == 2);
  CHECK(found->settings.main_process_ip == "job-master-0");
  CHECK(found->settings.main_process_port == 23456);
  CHECK_FALSE(found->settings.nproc_per_node);
}

TEST_CASE("no PET_NNODES, no PyTorchJob; an elastic range is an elastic job", "[pytorchjob]") {
  CHECK_FALSE(detect_pytorchjob({{"MASTER_ADDR", "a"}, {"RANK", "1"}, {"WORLD_SIZE", "2"}}));
  // As --nnodes 1:3 (the PET_NNODES variable says the same to the settings).
  std::optional<ClusterDetection> elastic =
      detect_pytorchjob({{"PET_NNODES", "1:3"}, {"RANK", "1"}, {"MASTER_ADDR", "m"}});
  REQUIRE(elastic);
  CHECK_FALSE(elastic->refusal);
  CHECK(elastic->notes.empty());
  CHECK(elastic->settings.min_machines == 1);
  CHECK(elastic->settings.max_machines == 3);
  CHECK(elastic->settings.num_machines == 3);
  CHECK(elastic->settings.machine_rank == 1);
  // No rank: torchrun's default, 0 (a --node_rank flag may give it).
  std::optional<ClusterDetection> unranked = detect_pytorchjob({{"PET_NNODES", "2"}});
  REQUIRE(unranked);
  CHECK_FALSE(unranked->refusal);
  CHECK_FALSE(unranked->settings.machine_rank);
}

// Two pods that both ran as machine 0 would each wait for a machine 1 that never comes.
TEST_CASE("a bad PET_NNODES, rank or port is refused, naming the variable", "[pytorchjob]") {
  const std::pair<Environment, const char*> cases[] = {
      {{{"PET_NNODES", "2"}, {"RANK", "x"}},
       "environment variable RANK='x' is not a machine rank of the 2-machine job "
       "(PET_NNODES=2): allowed 0..1"},
      {{{"PET_NNODES", "2"}, {"RANK", "5"}}, "RANK='5' is not a machine rank"},
      {{{"PET_NNODES", "1:4"}, {"RANK", "4"}}, "RANK='4' is not a machine rank of the 4-machine"},
      {{{"PET_NNODES", "x"}}, "PET_NNODES='x' is not a machine count N or range MIN:MAX"},
      {{{"PET_NNODES", "2"}, {"RANK", "1"}, {"MASTER_PORT", "abc"}},
       "MASTER_PORT='abc' is not a TCP port"},
  };
  for (const auto& [env, says] : cases) {
    INFO(says);
    std::optional<ClusterDetection> found = detect_pytorchjob(env);
    REQUIRE(found);
    REQUIRE(found->refusal);
    CHECK(found->refusal->find(says) != std::string::npos);
  }
}
