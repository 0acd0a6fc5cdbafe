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

/// The most machines a manager's variables may name (as --num_machines allows).
inline constexpr int kMaxMachines = 1 << 16;

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

// The variables that say which job this is must be right: a launcher that drops a bad one
// would run a job of its own (a 1-machine job, or machine 0 twice), so each of these makes
// a bad value the detection's refusal (exit 2), naming the variable and its value.

/// The manager's machine count (an integer >= 1); nullopt when unset or refused.
std::optional<int> machines_var(const Environment& env, const char* name, ClusterDetection& found);

/// This machine's rank, 0 .. machines-1, where `machines` came from `machines_name`. Unset is
/// rank 0 for a 1-machine job and a refusal for more.
std::optional<int> rank_var(const Environment& env, const char* name, int machines,
                            const char* machines_name, ClusterDetection& found);

/// machine 0's store port (0..65535, 0: xlaunch's default); nullopt when unset or refused.
std::optional<int> port_var(const Environment& env, const char* name, ClusterDetection& found);

}  // namespace xlaunch::cluster
