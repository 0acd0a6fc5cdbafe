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

TEST_CASE("no PET_NNODES, no PyTorchJob; odd values are notes", "[pytorchjob]") {
  CHECK_FALSE(detect_pytorchjob({{"MASTER_ADDR", "a"}, {"RANK", "1"}, {"WORLD_SIZE", "2"}}));
  std::optional<ClusterDetection> elastic = detect_pytorchjob({{"PET_NNODES", "1:3"}});
  REQUIRE(elastic);
  CHECK_FALSE(elastic->settings.num_machines);
  REQUIRE(elastic->notes.size() == 1);
  CHECK(elastic->notes[0].find("elastic") != std::string::npos);
  std::optional<ClusterDetection> junk = detect_pytorchjob({{"PET_NNODES", "x"}});
  REQUIRE(junk);
  CHECK(junk->notes.at(0).find("not a number") != std::string::npos);
}
