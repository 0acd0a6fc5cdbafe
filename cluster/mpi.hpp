// MPI launchers: Open MPI's mpirun and PMI (MPICH/Intel MPI hydra). Pure.
#pragma once

#include <optional>

#include "cluster/detect.hpp"

namespace xlaunch::cluster {

/// Open MPI: OMPI_COMM_WORLD_SIZE/RANK give machines and this machine's rank. mpirun knows no
/// store address: MASTER_ADDR/MASTER_PORT, when passed on (mpirun -x), give it.
std::optional<ClusterDetection> detect_open_mpi(const Environment& env);

/// PMI (MPICH's hydra, Intel MPI): PMI_SIZE/PMI_RANK, MASTER_ADDR/MASTER_PORT as above.
std::optional<ClusterDetection> detect_pmi(const Environment& env);

}  // namespace xlaunch::cluster
