// Settings from XLAUNCH_<KEY> environment variables (XLAUNCH_NUM_PROCESSES, ...).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/settings.hpp"

namespace xlaunch::config {

/// Looks up one environment variable; nullopt when it is not set. A function so that tests
/// (and callers with a prepared environment) need not touch the process's.
using Getenv = std::function<std::optional<std::string>(const std::string&)>;

/// The process environment (std::getenv).
Getenv process_environment();

/// The setting variables xlaunch also exports to its workers (launcher/worker_env.cpp). In a
/// worker of an xlaunch job (XLAUNCH_RUN_ID set) they are that job's, so a nested launch does
/// not read them as its own settings (docs/config.md, "Nested launches").
const std::vector<std::string_view>& worker_only_variables();

/// Reads XLAUNCH_<KEY upper-cased> for every schema key but, inside a worker of an xlaunch
/// job, worker_only_variables() (a notice names each ignored). An empty variable counts as
/// unset.
/// Bad values are a UsageError listing each as
/// "environment variable XLAUNCH_X: bad value 'y' (allowed: ...)". `notices` (optional)
/// receives notices about accepted values.
Settings settings_from_env(const Getenv& getenv, std::vector<std::string>* notices = nullptr);

/// torchrun's PET_<FLAG> variable for each torchrun flag that maps onto a schema key, e.g.
/// {"PET_NNODES", "num_machines"}. (Switches such as PET_STANDALONE are the command line's.)
struct PetVariable {
  std::string_view name;
  std::string_view key;
  bool is_switch = false;  ///< torchrun reads it as an integer: 0 off, anything else on
};
const std::vector<PetVariable>& pet_variables();
/// Whether one of torchrun's PET_* variables is set (not empty): torchrun (or Kubeflow's
/// PyTorchJob) set up this launch.
bool names_pet_variable(const Getenv& getenv);

/// Reads every PET_* variable of pet_variables(), as torchrun does (Kubeflow's PyTorchJob
/// sets PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK). Empty counts as unset. Bad values
/// are one UsageError listing each as "environment variable PET_X: bad value ...".
Settings settings_from_pet_env(const Getenv& getenv, std::vector<std::string>* notices = nullptr);

/// The XLAUNCH_* names in `names` that are neither a setting nor one of xlaunch's other
/// variables, each as "XLAUNCH_X is not an xlaunch variable (did you mean XLAUNCH_Y?)".
std::vector<std::string> unknown_xlaunch_variables(const std::vector<std::string>& names);

}  // namespace xlaunch::config
