// What a cluster manager's environment says about the machines of a job. Each manager has its
// own pure detector (slurm.hpp, mpi.hpp, pytorchjob.hpp); detect_cluster tries them in order.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/settings.hpp"
#include "launcher/environment.hpp"

namespace xlaunch::cluster {

using launcher::Environment;

struct ClusterDetection {
  std::string scheduler;  ///< "SLURM", "Open MPI", "PMI", "PyTorchJob"; empty: none found
  /// num_machines, machine_rank and, when known, main_process_ip (and port, nproc_per_node).
  /// Lower precedence than everything the user set.
  config::Settings settings;
  std::vector<std::string> notes;  ///< problems worth a warning (e.g. a bad hostlist)
  /// Set when the manager started the launchers in a way that cannot work (two launchers
  /// on one node of an srun step): the launch is refused with this and `hint`.
  std::optional<std::string> refusal;
  std::string hint;
};

/// The first manager whose variables are present: SLURM (inside an srun step), then Open MPI
/// (mpirun), PMI (MPICH/Intel MPI hydra), PyTorchJob (Kubeflow's PET_* variables). SLURM wins
/// over the MPI variables (srun --mpi=pmi2 sets both).
ClusterDetection detect_cluster(const Environment& env);

/// `settings` with the detected values filled in where `settings` says nothing. Throws
/// UsageError (exit 2) with the detection's refusal and hint when it has one.
config::Settings apply_cluster(const config::Settings& settings, const ClusterDetection& found);

/// The scheduler's name on the first line, then one indented "key: value" line per detected
/// value and warning; for `xlaunch env`, which prints it after "cluster:".
std::string describe(const ClusterDetection& found);

/// For the detectors: the variable as a number >= 0; a note when it is set but not one.
std::optional<int> int_var(const Environment& env, const char* name, ClusterDetection& found);

}  // namespace xlaunch::cluster
