// What a cluster scheduler's environment says about the machines of a job: SLURM (srun),
// Open MPI (mpirun) and PMI (MPICH/Intel MPI hydra). Pure: the variables come in a map.
#pragma once

#include <string>
#include <vector>

#include "config/settings.hpp"
#include "launcher/environment.hpp"

namespace xlaunch::cluster {

using launcher::Environment;

struct ClusterDetection {
  std::string scheduler;  ///< "SLURM", "Open MPI", "PMI"; empty when none was found
  /// num_machines, machine_rank and, when known, main_process_ip (and port for MPI/PMI
  /// from MASTER_ADDR/MASTER_PORT). Lower precedence than everything the user set.
  config::Settings settings;
  std::vector<std::string> notes;  ///< problems worth a warning (e.g. a bad hostlist)
};

/// SLURM: inside an srun step (SLURM_STEP_ID or SLURM_STEPID set) with SLURM_NNODES,
/// SLURM_NODEID and SLURM_JOB_NODELIST (or SLURM_NODELIST): one launcher per node, machine
/// 0 is the first host of the list. Open MPI: OMPI_COMM_WORLD_SIZE/RANK. PMI: PMI_SIZE/RANK.
/// SLURM wins over the MPI variables (srun --mpi=pmi2 sets both).
ClusterDetection detect_cluster(const Environment& env);

/// `settings` with the detected values filled in where `settings` says nothing.
config::Settings apply_cluster(const config::Settings& settings, const ClusterDetection& found);

/// One line per detected value, for `xlaunch env` and the launcher's log.
std::string describe(const ClusterDetection& found);

}  // namespace xlaunch::cluster
