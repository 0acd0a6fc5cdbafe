#include "cluster/slurm.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "cluster/hostlist.hpp"
#include "config/text.hpp"

namespace xlaunch::cluster {

using launcher::lookup;

namespace {

// The first of the variables that is set: the step's before the job's.
std::optional<std::string> first_of(const Environment& env,
                                    std::initializer_list<const char*> names, const char*& used) {
  for (const char* name : names) {
    if (auto value = lookup(env, name)) {
      used = name;
      return value;
    }
  }
  return std::nullopt;
}

// Why this step has more than one launcher on a node (this one, or some node when the
// per-node counts are missing); nullopt when it has one per node or does not say.
std::optional<std::string> crowded_node(const Environment& env, int node, int nodes,
                                        const std::string& where, ClusterDetection& found) {
  const char* used = "";
  if (auto text = first_of(env, {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"}, used)) {
    try {
      std::vector<int> counts = expand_tasks_per_node(*text);
      if (node < static_cast<int>(counts.size())) {
        if (counts[node] < 2) return std::nullopt;
        return fmt::format("srun started {} launchers on {} ({}={}), which would all be machine {}",
                           counts[node], where, used, *text, node);
      }
    } catch (const std::invalid_argument& e) {
      found.notes.push_back(fmt::format("{}: {}", used, e.what()));
    }
  }
  for (const char* name : {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"}) {
    if (!lookup(env, name)) continue;
    auto tasks = int_var(env, name, found);
    if (!tasks || *tasks <= nodes) return std::nullopt;
    return fmt::format("srun started {} launchers on {} node{} ({}={}), more than one on some node",
                       *tasks, nodes, nodes == 1 ? "" : "s", name, *tasks);
  }
  return std::nullopt;
}

}  // namespace

std::vector<int> expand_tasks_per_node(std::string_view text) {
  std::vector<int> out;
  for (std::string_view item : config::split(text, ',')) {
    item = config::trim(item);
    int count = 0;
    int repeat = 1;
    std::string_view count_text = item;
    if (auto open = item.find("(x"); open != std::string_view::npos) {
      if (item.back() != ')' ||
          !config::parse_int(item.substr(open + 2, item.size() - open - 3), repeat) || repeat < 1 ||
          repeat > 1'000'000) {
        throw std::invalid_argument(fmt::format("'{}' is not COUNT(xREPEAT)", item));
      }
      count_text = item.substr(0, open);
    }
    if (!config::parse_int(count_text, count) || count < 0) {
      throw std::invalid_argument(fmt::format("'{}' is not a task count", item));
    }
    // Many "1(x1000000)" items would otherwise take gigabytes; no job has more nodes.
    if (static_cast<std::size_t>(repeat) > static_cast<std::size_t>(kMaxMachines) - out.size()) {
      throw std::invalid_argument(fmt::format("lists more than {} nodes", kMaxMachines));
    }
    out.insert(out.end(), static_cast<std::size_t>(repeat), count);
  }
  return out;
}

std::optional<ClusterDetection> detect_slurm(const Environment& env) {
  if (!lookup(env, "SLURM_STEP_ID") && !lookup(env, "SLURM_STEPID")) return std::nullopt;
  ClusterDetection found;
  found.scheduler = "SLURM";
  const char* nodes_name = "SLURM_NNODES";
  first_of(env, {"SLURM_STEP_NUM_NODES", "SLURM_NNODES"}, nodes_name);
  const auto nodes = machines_var(env, nodes_name, found);
  if (found.refusal) return found;
  if (!nodes) return std::nullopt;  // a step without a node count: not one xlaunch can read
  const auto node = rank_var(env, "SLURM_NODEID", *nodes, nodes_name, found);
  if (!node) return found;  // refused
  found.settings.num_machines = *nodes;
  found.settings.machine_rank = *node;

  const char* used = "";
  auto list = first_of(env, {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"}, used);
  std::vector<std::string> hosts;
  if (list) {
    try {
      hosts = expand_hostlist(*list);
      if (!hosts.empty()) found.settings.main_process_ip = hosts.front();
    } catch (const std::invalid_argument& e) {
      found.notes.push_back(fmt::format("{}: {}; give --main_process_ip", used, e.what()));
    }
  }

  std::string where =
      *node < static_cast<int>(hosts.size()) ? hosts[*node] : fmt::format("node {}", *node);
  if (auto why = crowded_node(env, *node, *nodes, where, found)) {
    found.refusal = *why;
    found.hint =
        "run one xlaunch per node: srun --ntasks-per-node=1 (xlaunch starts the workers; "
        "give --nproc_per_node for how many per node)";
  }
  return found;
}

}  // namespace xlaunch::cluster
