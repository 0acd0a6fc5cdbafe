#include "cluster/pytorchjob.hpp"

#include <fmt/format.h>

#include "config/text.hpp"

namespace xlaunch::cluster {

using launcher::lookup;

namespace {

std::optional<int> int_of(const Environment& env, std::initializer_list<const char*> names,
                          ClusterDetection& found) {
  for (const char* name : names) {
    if (lookup(env, name)) return int_var(env, name, found);
  }
  return std::nullopt;
}

}  // namespace

std::optional<ClusterDetection> detect_pytorchjob(const Environment& env) {
  auto nnodes = lookup(env, "PET_NNODES");
  if (!nnodes) return std::nullopt;
  ClusterDetection found;
  found.scheduler = "PyTorchJob";
  std::string_view text = config::trim(*nnodes);
  int lo = 0;
  int hi = 0;
  if (auto colon = text.find(':'); colon != std::string_view::npos) {
    if (!config::parse_int(text.substr(0, colon), lo) ||
        !config::parse_int(text.substr(colon + 1), hi) || lo < 1 || hi < lo) {
      found.notes.push_back(fmt::format("PET_NNODES='{}' is not N or MIN:MAX; ignored", text));
    } else if (lo != hi) {
      found.notes.push_back(
          fmt::format("PET_NNODES={} is an elastic range; give --nnodes {} yourself to run elastic",
                      text, text));
    } else {
      found.settings.num_machines = lo;
    }
  } else if (config::parse_int(text, lo) && lo >= 1) {
    found.settings.num_machines = lo;
  } else {
    found.notes.push_back(fmt::format("PET_NNODES='{}' is not a number; ignored", text));
  }
  if (auto rank = int_of(env, {"PET_NODE_RANK", "RANK"}, found)) {
    found.settings.machine_rank = *rank;
  }
  for (const char* name : {"PET_MASTER_ADDR", "MASTER_ADDR"}) {
    if (auto addr = lookup(env, name); addr && !addr->empty()) {
      found.settings.main_process_ip = *addr;
      break;
    }
  }
  if (auto port = int_of(env, {"PET_MASTER_PORT", "MASTER_PORT"}, found)) {
    found.settings.main_process_port = *port;
  }
  // "auto", "gpu" and "cpu" are torchrun's own choices; xlaunch's default already counts GPUs.
  if (auto nproc = lookup(env, "PET_NPROC_PER_NODE")) {
    int n = 0;
    if (config::parse_int(*nproc, n) && n >= 1) found.settings.nproc_per_node = n;
  }
  return found;
}

}  // namespace xlaunch::cluster
