// How this launcher meets the other machines, read from the merged settings: the decisions
// (elastic or fixed size, etcd or machine 0's store) and the values the join needs, checked,
// so that job/ receives them typed. Pure.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "config/settings.hpp"

namespace xlaunch::config {

struct JoinSettings {
  /// --nnodes MIN:MAX with MIN < MAX: the job runs with MIN..MAX machines, round by round.
  bool elastic = false;
  int min_machines = 0;  ///< elastic jobs only; 0 otherwise
  int max_machines = 0;  ///< elastic jobs only; 0 otherwise
  /// An elastic job's launcher that hosts the store: the one given --machine_rank 0 or, without
  /// --machine_rank, the one given no --main_process_ip. The others take machine ranks by join
  /// order, round by round.
  bool hosts_elastic_store = false;
  /// Machine 0 only because --rdzv_endpoint names this machine: when the port is already
  /// bound (another launcher of the job on this host hosts the store), this launcher joins
  /// it as a client instead, taking its machine rank by arrival (torchrun's c10d backend).
  bool host_or_join = false;
  /// --rdzv_backend etcd or etcd-v2: the launchers meet in etcd.
  bool etcd = false;
  /// Names the launchers' keys: --rdzv_id, or "default". Every machine must use the same
  /// keys: the random default run id differs per machine.
  std::string rdzv_id;
  /// --num_processes given without --nproc_per_node: the job's total, which every machine
  /// must agree on.
  std::optional<int> total_processes;
};

/// The join's decisions from `settings` (after the cluster manager's values are applied).
JoinSettings join_settings(const Settings& settings);

/// etcd's address for --rdzv_backend etcd: --main_process_ip:--main_process_port, port 2379
/// when 0 or unset, an IPv6 address in brackets. Throws UsageError (exit 2) without an address.
std::string etcd_endpoint(const Settings& settings);

/// How long the join waits.
struct JoinTimeouts {
  std::chrono::milliseconds rdzv{};       ///< --rdzv_timeout, default 900 s
  std::chrono::milliseconds heartbeat{};  ///< --heartbeat_timeout, default 30 s
  /// Elastic: once MIN machines are in, how long to wait for more; torchrun's c10d default
  /// (30 s), which --rdzv_conf last_call_timeout=S sets.
  std::chrono::milliseconds last_call{};
  double heartbeat_seconds = 0;  ///< as given: the machines agree on its text
};

/// Throws UsageError (exit 2), "--rdzv_timeout must be a number of seconds > 0 (got X)", for
/// a timeout that is not (settings read through the schema never hold one).
JoinTimeouts join_timeouts(const Settings& settings);

}  // namespace xlaunch::config
