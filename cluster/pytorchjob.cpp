#include "cluster/pytorchjob.hpp"

#include <fmt/format.h>

#include "config/text.hpp"
#include "config/torchrun_values.hpp"
#include "config/validate.hpp"

namespace xlaunch::cluster {

using launcher::lookup;

namespace {

// The first of the variables that is set (torchrun's PET_ one before the operator's own).
const char* first_set(const Environment& env, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (lookup(env, name)) return name;
  }
  return nullptr;
}

}  // namespace

std::optional<ClusterDetection> detect_pytorchjob(const Environment& env) {
  auto nnodes = lookup(env, "PET_NNODES");
  if (!nnodes) return std::nullopt;
  ClusterDetection found;
  found.scheduler = "PyTorchJob";
  // torchrun's syntax: N, or MIN:MAX for an elastic job (the same as --nnodes MIN:MAX).
  const auto range = config::parse_nnodes(*nnodes, kMaxMachines);
  if (!range) {
    found.refusal = fmt::format(
        "environment variable PET_NNODES='{}' is not a machine count N or range MIN:MAX",
        config::printable(*nnodes));
    found.hint = "give PET_NNODES as torchrun's --nnodes takes it (2, or 1:4), or unset it";
    return found;
  }
  found.settings.num_machines = range->max;  // an elastic job plans for MAX machines
  if (range->min < range->max) {
    found.settings.min_machines = range->min;
    found.settings.max_machines = range->max;
  }
  // In an elastic job ranks come by arrival; the rank only says whether this pod hosts (0).
  if (const char* name = first_set(env, {"PET_NODE_RANK", "RANK"})) {
    if (auto rank = rank_var(env, name, range->max, "PET_NNODES", found)) {
      found.settings.machine_rank = *rank;
    }
  }  // none: rank 0 unless --node_rank says otherwise, as torchrun's default
  for (const char* name : {"PET_MASTER_ADDR", "MASTER_ADDR"}) {
    if (auto addr = lookup(env, name); addr && !addr->empty()) {
      found.settings.main_process_ip = *addr;
      break;
    }
  }
  if (const char* name = first_set(env, {"PET_MASTER_PORT", "MASTER_PORT"})) {
    if (auto port = port_var(env, name, found)) found.settings.main_process_port = *port;
  }
  // "auto", "gpu" and "cpu" are torchrun's own choices; xlaunch's default already counts GPUs.
  if (auto nproc = lookup(env, "PET_NPROC_PER_NODE")) {
    int n = 0;
    if (config::parse_int(*nproc, n) && n >= 1) found.settings.nproc_per_node = n;
  }
  return found;
}

}  // namespace xlaunch::cluster
