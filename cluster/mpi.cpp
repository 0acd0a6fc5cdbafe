#include "cluster/mpi.hpp"

#include <fmt/format.h>

namespace xlaunch::cluster {

using launcher::lookup;

namespace {

// Several launchers on one host work (their ranks differ), but each uses every visible GPU
// of the host: worth a warning, with the option that places one per host.
std::optional<ClusterDetection> detect_mpi(const Environment& env, const char* name,
                                           const char* size_name, const char* rank_name,
                                           const char* local_size_var, const char* one_per_host) {
  if (!lookup(env, size_name)) return std::nullopt;
  ClusterDetection found;
  found.scheduler = name;
  const auto size = machines_var(env, size_name, found);
  if (!size) return found;  // refused
  const auto rank = rank_var(env, rank_name, *size, size_name, found);
  if (!rank) return found;
  found.settings.num_machines = *size;
  found.settings.machine_rank = *rank;
  if (auto addr = lookup(env, "MASTER_ADDR"); addr && !addr->empty()) {
    found.settings.main_process_ip = *addr;
  }
  if (auto port = port_var(env, "MASTER_PORT", found)) found.settings.main_process_port = *port;
  if (auto local = int_var(env, local_size_var, found); local && *local > 1) {
    found.notes.push_back(fmt::format(
        "{} launchers on this host ({}={}): each uses all of its GPUs; use {} for one per host",
        *local, local_size_var, *local, one_per_host));
  }
  return found;
}

}  // namespace

std::optional<ClusterDetection> detect_open_mpi(const Environment& env) {
  return detect_mpi(env, "Open MPI", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
                    "OMPI_COMM_WORLD_LOCAL_SIZE", "mpirun --map-by ppr:1:node");
}

std::optional<ClusterDetection> detect_pmi(const Environment& env) {
  return detect_mpi(env, "PMI", "PMI_SIZE", "PMI_RANK", "MPI_LOCALNRANKS", "mpiexec -ppn 1");
}

}  // namespace xlaunch::cluster
