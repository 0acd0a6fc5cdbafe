// Rules between settings once every source is merged: torchrun's --rdzv_endpoint onto the
// store address, which of two ways of saying one thing wins, and the contradictions that
// are a usage error rather than a guess. Pure: the host's addresses come in as a function.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "config/resolve.hpp"
#include "config/usage_error.hpp"

namespace xlaunch::config {

/// Whether `host` names this machine (one of its addresses, or its name).
using IsLocalHost = std::function<bool(const std::string& host)>;

/// Applies, in place:
/// - rdzv_endpoint host[:port] -> main_process_ip / main_process_port (port 29400 when not
///   given; port 0, a free one, only for one machine). The launcher on the endpoint's host (or with
///   rdzv_conf is_host=true) hosts the store: without a machine rank it becomes machine 0 (and, on
///   the endpoint's host without is_host, of a several-machine job, rdzv_host_guessed: it may join
///   instead). Any other launcher of a fixed-size several-machine job needs --node_rank for now
///   (UsageError).
/// - num_processes against nproc_per_node, use_cpu against distributed_type: when they come
///   from different sources the higher source wins and the other is dropped.
/// Throws UsageError for a contradiction within one source (--num_processes 2
/// --nproc_per_node 3, distributed_type MULTI_GPU with use_cpu true), for distributed_type NO
/// with more than one process, and for an elastic --nnodes MIN:MAX (not supported yet).
void apply_launch_rules(Resolved& resolved, const IsLocalHost& is_local);

/// UsageError when rdzv_endpoint says port 0 (a free port, as torchrun's --standalone) but
/// the job has `machines` > 1: the others could not find it. `name` says where the endpoint
/// came from (--rdzv_endpoint, PET_RDZV_ENDPOINT). apply_launch_rules calls it; the launch
/// again once a cluster manager's machine count is known.
void check_endpoint_port(const Settings& s, int machines, const std::string& name);

/// The error for a total and a per-machine count that disagree: `per_machine` as given
/// ("3", "cpu"), `counted` what it is here, `where` " (the source)" or "". The launch rules
/// raise it for numbers; the plan for cpu/gpu/auto, once counted.
UsageError count_contradiction(int total, std::string_view per_machine, int machines, int counted,
                               std::string_view where);

/// The real host: loopback names, this machine's host name and interface addresses.
bool is_local_host(const std::string& host);

}  // namespace xlaunch::config
