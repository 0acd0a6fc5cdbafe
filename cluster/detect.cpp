#include "cluster/detect.hpp"

#include <fmt/format.h>

#include "cluster/mpi.hpp"
#include "cluster/pytorchjob.hpp"
#include "cluster/slurm.hpp"
#include "config/text.hpp"
#include "config/usage_error.hpp"
#include "config/validate.hpp"

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

namespace {

// The first problem is the one reported; the hint says where such variables come from.
void refuse(ClusterDetection& found, std::string why) {
  if (found.refusal) return;
  found.refusal = std::move(why);
  found.hint =
      "the cluster manager sets these for each launcher it starts; if they were set by hand or "
      "inherited, fix them or unset them (flags such as --num_machines do not replace them)";
}

}  // namespace

std::optional<int> machines_var(const Environment& env, const char* name, ClusterDetection& found) {
  auto value = launcher::lookup(env, name);
  if (!value) return std::nullopt;
  int n = 0;
  if (!config::parse_int(*value, n) || n < 1 || n > kMaxMachines) {
    refuse(found, fmt::format("environment variable {}='{}' is not a machine count (1..{})", name,
                              config::printable(*value), kMaxMachines));
    return std::nullopt;
  }
  return n;
}

std::optional<int> rank_var(const Environment& env, const char* name, int machines,
                            const char* machines_name, ClusterDetection& found) {
  auto value = launcher::lookup(env, name);
  if (!value) {
    if (machines == 1) return 0;
    refuse(found, fmt::format("environment variable {}={} makes this a {}-machine job, but {} "
                              "(this machine's rank) is not set",
                              machines_name, machines, machines, name));
    return std::nullopt;
  }
  int n = 0;
  if (!config::parse_int(*value, n) || n < 0 || n >= machines) {
    refuse(found,
           fmt::format("environment variable {}='{}' is not a machine rank of the {}-machine "
                       "job ({}={}): allowed 0..{}",
                       name, config::printable(*value), machines, machines_name, machines,
                       machines - 1));
    return std::nullopt;
  }
  return n;
}

std::optional<int> port_var(const Environment& env, const char* name, ClusterDetection& found) {
  auto value = launcher::lookup(env, name);
  if (!value) return std::nullopt;
  int n = 0;
  if (!config::parse_int(*value, n) || n < 0 || n > 65535) {
    refuse(found, fmt::format("environment variable {}='{}' is not a TCP port (0..65535)", name,
                              config::printable(*value)));
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
