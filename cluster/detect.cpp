#include "cluster/detect.hpp"

#include <fmt/format.h>

#include "cluster/mpi.hpp"
#include "cluster/pytorchjob.hpp"
#include "cluster/slurm.hpp"
#include "config/text.hpp"
#include "config/usage_error.hpp"

namespace xlaunch::cluster {

std::optional<int> int_var(const Environment& env, const char* name, ClusterDetection& found) {
  auto value = launcher::lookup(env, name);
  if (!value) return std::nullopt;
  int n = 0;
  if (!config::parse_int(*value, n) || n < 0) {
    found.notes.push_back(fmt::format("{}='{}' is not a number; ignored", name, *value));
    return std::nullopt;
  }
  return n;
}

ClusterDetection detect_cluster(const Environment& env) {
  using Detector = std::optional<ClusterDetection> (*)(const Environment&);
  for (Detector detect : {&detect_slurm, &detect_open_mpi, &detect_pmi, &detect_pytorchjob}) {
    if (std::optional<ClusterDetection> found = detect(env)) return *found;
  }
  return {};
}

config::Settings apply_cluster(const config::Settings& settings, const ClusterDetection& found) {
  if (found.refusal) throw UsageError(*found.refusal, found.hint);
  return config::merge(found.settings, settings);
}

std::string describe(const ClusterDetection& found) {
  if (found.scheduler.empty())
    return "none detected (no SLURM step, Open MPI, PMI or PyTorchJob variables)";
  std::string out = found.scheduler;
  const config::Settings& s = found.settings;
  if (s.num_machines) out += fmt::format("\n  num_machines: {}", *s.num_machines);
  if (s.machine_rank) out += fmt::format("\n  machine_rank: {}", *s.machine_rank);
  if (s.main_process_ip) out += fmt::format("\n  main_process_ip: {}", *s.main_process_ip);
  if (s.main_process_port) out += fmt::format("\n  main_process_port: {}", *s.main_process_port);
  if (s.nproc_per_node) out += fmt::format("\n  nproc_per_node: {}", *s.nproc_per_node);
  for (const std::string& note : found.notes) out += fmt::format("\n  warning: {}", note);
  if (found.refusal) out += fmt::format("\n  error: {} ({})", *found.refusal, found.hint);
  return out;
}

}  // namespace xlaunch::cluster
