#include "cluster/detect.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "cluster/hostlist.hpp"
#include "launcher/text.hpp"

namespace xlaunch::cluster {

using launcher::lookup;
using launcher::parse_int;

namespace {

std::optional<int> int_var(const Environment& env, const char* name, ClusterDetection& found) {
  auto value = lookup(env, name);
  if (!value) return std::nullopt;
  int n = 0;
  if (!parse_int(*value, n) || n < 0) {
    found.notes.push_back(fmt::format("{}='{}' is not a number; ignored", name, *value));
    return std::nullopt;
  }
  return n;
}

bool detect_slurm(const Environment& env, ClusterDetection& found) {
  if (!lookup(env, "SLURM_STEP_ID") && !lookup(env, "SLURM_STEPID")) return false;
  auto nodes = int_var(env, "SLURM_NNODES", found);
  auto node = int_var(env, "SLURM_NODEID", found);
  auto list = lookup(env, "SLURM_JOB_NODELIST");
  if (!list) list = lookup(env, "SLURM_NODELIST");
  if (!nodes || !node) return false;
  found.scheduler = "SLURM";
  found.settings.num_machines = *nodes;
  found.settings.machine_rank = *node;
  if (list) {
    try {
      std::vector<std::string> hosts = expand_hostlist(*list);
      if (!hosts.empty()) found.settings.main_process_ip = hosts.front();
    } catch (const std::invalid_argument& e) {
      found.notes.push_back(
          fmt::format("SLURM_JOB_NODELIST: {}; give --main_process_ip", e.what()));
    }
  }
  return true;
}

bool detect_mpi(const Environment& env, ClusterDetection& found, const char* name,
                const char* size_var, const char* rank_var) {
  auto size = int_var(env, size_var, found);
  auto rank = int_var(env, rank_var, found);
  if (!size || !rank) return false;
  found.scheduler = name;
  found.settings.num_machines = *size;
  found.settings.machine_rank = *rank;
  // mpirun knows no "first host"; users pass it on (mpirun -x MASTER_ADDR).
  if (auto addr = lookup(env, "MASTER_ADDR"); addr && !addr->empty()) {
    found.settings.main_process_ip = *addr;
  }
  if (auto port = int_var(env, "MASTER_PORT", found)) found.settings.main_process_port = *port;
  return true;
}

}  // namespace

ClusterDetection detect_cluster(const Environment& env) {
  ClusterDetection found;
  if (detect_slurm(env, found)) return found;
  if (detect_mpi(env, found, "Open MPI", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"))
    return found;
  detect_mpi(env, found, "PMI", "PMI_SIZE", "PMI_RANK");
  return found;
}

config::Settings apply_cluster(const config::Settings& settings, const ClusterDetection& found) {
  return config::merge(found.settings, settings);
}

std::string describe(const ClusterDetection& found) {
  if (found.scheduler.empty())
    return "cluster: none detected (no SLURM step, Open MPI or PMI variables)\n";
  std::string out = fmt::format("cluster: {}\n", found.scheduler);
  const config::Settings& s = found.settings;
  if (s.num_machines) out += fmt::format("  num_machines: {}\n", *s.num_machines);
  if (s.machine_rank) out += fmt::format("  machine_rank: {}\n", *s.machine_rank);
  if (s.main_process_ip) out += fmt::format("  main_process_ip: {}\n", *s.main_process_ip);
  if (s.main_process_port) out += fmt::format("  main_process_port: {}\n", *s.main_process_port);
  for (const std::string& note : found.notes) out += fmt::format("  warning: {}\n", note);
  return out;
}

}  // namespace xlaunch::cluster
