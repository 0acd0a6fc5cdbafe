#include "cluster/mpi.hpp"

#include <catch2/catch.hpp>

#include "cluster/detect.hpp"

using namespace xlaunch;
using namespace xlaunch::cluster;

TEST_CASE("Open MPI ranks, with the store address passed on by mpirun -x", "[mpi]") {
  std::optional<ClusterDetection> ompi = detect_open_mpi({{"OMPI_COMM_WORLD_SIZE", "3"},
                                                          {"OMPI_COMM_WORLD_RANK", "1"},
                                                          {"OMPI_COMM_WORLD_LOCAL_SIZE", "1"},
                                                          {"MASTER_ADDR", "head"},
                                                          {"MASTER_PORT", "29400"}});
  REQUIRE(ompi);
  CHECK(ompi->scheduler == "Open MPI");
  CHECK(ompi->settings.num_machines == 3);
  CHECK(ompi->settings.machine_rank == 1);
  CHECK(ompi->settings.main_process_ip == "head");
  CHECK(ompi->settings.main_process_port == 29400);
  CHECK(ompi->notes.empty());
  CHECK_FALSE(detect_open_mpi({{"PMI_SIZE", "2"}, {"PMI_RANK", "0"}}));
}

TEST_CASE("several launchers on one host are a warning naming the option", "[mpi]") {
  std::optional<ClusterDetection> ompi = detect_open_mpi({{"OMPI_COMM_WORLD_SIZE", "2"},
                                                          {"OMPI_COMM_WORLD_RANK", "0"},
                                                          {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  REQUIRE(ompi);
  REQUIRE(ompi->notes.size() == 1);
  CHECK(ompi->notes[0].find("--map-by ppr:1:node") != std::string::npos);
  CHECK_FALSE(ompi->refusal);
  std::optional<ClusterDetection> pmi =
      detect_pmi({{"PMI_SIZE", "2"}, {"PMI_RANK", "1"}, {"MPI_LOCALNRANKS", "2"}});
  REQUIRE(pmi);
  REQUIRE(pmi->notes.size() == 1);
  CHECK(pmi->notes[0].find("-ppn 1") != std::string::npos);
}

TEST_CASE("PMI ranks", "[mpi]") {
  std::optional<ClusterDetection> pmi = detect_pmi({{"PMI_SIZE", "2"}, {"PMI_RANK", "0"}});
  REQUIRE(pmi);
  CHECK(pmi->scheduler == "PMI");
  CHECK(pmi->settings.num_machines == 2);
  CHECK_FALSE(pmi->settings.main_process_ip);
  CHECK_FALSE(pmi->refusal);
  CHECK_FALSE(detect_pmi({{"PMI_RANK", "0"}}));  // no size: not PMI
}

// A launcher that dropped these would run a 1-machine job of its own beside the others.
TEST_CASE("a bad size, rank or port is refused, naming the variable and its value", "[mpi]") {
  struct Case {
    Environment env;
    const char* says;
  };
  const Case cases[] = {
      {{{"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "x"}},
       "OMPI_COMM_WORLD_RANK='x' is not a machine rank of the 2-machine job"},
      {{{"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "5"}},
       "OMPI_COMM_WORLD_RANK='5' is not a machine rank of the 2-machine job "
       "(OMPI_COMM_WORLD_SIZE=2): allowed 0..1"},
      {{{"OMPI_COMM_WORLD_SIZE", "2"}}, "OMPI_COMM_WORLD_RANK (this machine's rank) is not set"},
      {{{"OMPI_COMM_WORLD_SIZE", "2x"}, {"OMPI_COMM_WORLD_RANK", "1"}},
       "OMPI_COMM_WORLD_SIZE='2x' is not a machine count"},
      {{{"OMPI_COMM_WORLD_SIZE", "0"}, {"OMPI_COMM_WORLD_RANK", "0"}},
       "OMPI_COMM_WORLD_SIZE='0' is not a machine count"},
      {{{"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "1"}, {"MASTER_PORT", "99999"}},
       "MASTER_PORT='99999' is not a TCP port"},
      {{{"PMI_SIZE", "2"}, {"PMI_RANK", "-1"}}, "PMI_RANK='-1' is not a machine rank"},
  };
  for (const Case& c : cases) {
    ClusterDetection found = detect_cluster(c.env);
    INFO(c.says);
    REQUIRE(found.refusal);
    CHECK(found.refusal->find(c.says) != std::string::npos);
    CHECK(found.hint.find("unset") != std::string::npos);
  }
  // One machine needs no rank.
  std::optional<ClusterDetection> alone = detect_pmi({{"PMI_SIZE", "1"}});
  REQUIRE(alone);
  CHECK_FALSE(alone->refusal);
  CHECK(alone->settings.machine_rank == 0);
}
