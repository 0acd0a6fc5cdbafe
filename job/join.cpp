#include "job/join.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include "cluster/store_backend.hpp"
#include "config/schema.hpp"
#include "config/validate.hpp"
#include "job/store_hosting.hpp"
#include "launcher/console.hpp"
#include "launcher/exit_status.hpp"
#include "launcher/launch_error.hpp"
#include "launcher/process.hpp"

#ifndef XLAUNCH_VERSION
#define XLAUNCH_VERSION "unknown"
#endif

namespace xlaunch::job {

using namespace launcher;
using namespace cluster;

namespace {

AgentOptions agent_options(const Job& job) {
  const LaunchPlan& plan = job.plan;
  const config::JoinSettings& join = job.join;
  AgentOptions o;
  o.run_id = join.rdzv_id;
  o.job_run_id = plan.run_id;
  o.num_machines = plan.num_machines;
  o.machine_rank = plan.machine_rank;
  o.min_machines = join.min_machines;
  o.max_machines = join.max_machines;
  o.max_restarts = plan.max_restarts;
  o.store_host = plan.machine_rank == 0 ? "127.0.0.1" : plan.master_addr;
  if (plan.machine_rank == 0 && !plan.bind_host.empty() && plan.bind_host != "::" &&
      plan.bind_host != "0.0.0.0") {
    o.store_host = plan.bind_host;
  }
  o.store_port = plan.master_port;
  o.advertised_store_host = plan.master_addr;
  o.host = job.host;
  o.pid = static_cast<long>(::getpid());
  o.local_processes = plan.local_world_size;
  o.version = XLAUNCH_VERSION;
  o.total_processes = join.total_processes;
  const config::JoinTimeouts timeouts = config::join_timeouts(job.settings);
  o.rdzv_timeout = timeouts.rdzv;
  o.heartbeat_timeout = timeouts.heartbeat;
  o.last_call_timeout = timeouts.last_call;
  o.stop_pending = [] { return pending_stop_signal(); };
  o.settings = agreed_settings({
      {"num_machines", std::to_string(plan.num_machines)},
      {"num_processes", join.total_processes ? std::to_string(*join.total_processes) : "-"},
      {"max_restarts", std::to_string(plan.max_restarts)},
      {"distributed_type", std::string(config::to_string(plan.distributed_type))},
      {"mixed_precision", std::string(config::to_string(plan.mixed_precision))},
      {"heartbeat_timeout", fmt::format("{:g}", timeouts.heartbeat_seconds)},
  });
  if (o.elastic()) {
    o.settings +=
        agreed_settings({{"nnodes", fmt::format("{}:{}", o.min_machines, o.max_machines)}});
  }
  return o;
}

// Says which job this machine joins, where, and how long it waits.
void announce_join(const Job& job, const AgentOptions& options) {
  const LaunchPlan& plan = job.plan;
  const double wait_s = options.rdzv_timeout.count() / 1000.0;
  if (!job.cluster.scheduler.empty() && options.elastic()) {
    say("xlaunch: {} detected: an elastic job of {}..{} machines, machine 0 at {}\n",
        job.cluster.scheduler, options.min_machines, options.max_machines, plan.master_addr);
  } else if (!job.cluster.scheduler.empty() && plan.machine_rank < 0) {  // rank by arrival
    say("xlaunch: {} detected: a {}-machine job, machine 0 at {}\n", job.cluster.scheduler,
        plan.num_machines, plan.master_addr);
  } else if (!job.cluster.scheduler.empty()) {
    say("xlaunch: {} detected: machine {} of {}, machine 0 at {}\n", job.cluster.scheduler,
        plan.machine_rank, plan.num_machines, plan.master_addr);
  }
  if (job.via_etcd && options.elastic()) {
    say("xlaunch: joining the elastic job ({}..{} machines) through etcd at {} (waiting up to "
        "{:g}s)\n",
        options.min_machines, options.max_machines, job.etcd_endpoint, wait_s);
  } else if (job.via_etcd) {
    say("xlaunch: joining the {}-machine job through etcd at {} (waiting up to {:g}s)\n",
        plan.num_machines, job.etcd_endpoint, wait_s);
  } else if (options.elastic()) {
    say("xlaunch: {}: joining the elastic job ({}..{} machines) at {}:{} (waiting up to "
        "{:g}s)\n",
        plan.machine_rank == 0 ? "machine 0" : "this machine", options.min_machines,
        options.max_machines, options.store_host, options.store_port, wait_s);
  } else if (plan.machine_rank < 0) {  // its rank comes from the join (store_hosting.hpp)
    say("xlaunch: this machine: joining the {}-machine job at {}:{} (waiting up to {:g}s "
        "for every machine)\n",
        plan.num_machines, options.store_host, options.store_port, wait_s);
  } else {
    say("xlaunch: machine {} of {}: joining the job at {}:{} (waiting up to {:g}s "
        "for every machine)\n",
        plan.machine_rank, plan.num_machines, options.store_host, options.store_port, wait_s);
  }
}

// Applies a round's membership: ranks, sizes and the job's run id on this machine.
void adopt(LaunchPlan& plan, const Membership& m) {
  plan.world_size = m.layout.world_size();
  plan.machine_rank = m.machine_rank;
  plan.num_machines = m.num_machines();
  plan.rank_offset = m.layout.rank_offset(m.machine_rank);
  if (!m.layout.run_id.empty()) {
    if (!config::is_valid_run_id(m.layout.run_id)) {
      throw LaunchError(fmt::format("machine 0 announced an invalid run id '{}'",
                                    config::printable(m.layout.run_id)),
                        exit_status::kFailure);
    }
    plan.run_id = m.layout.run_id;
  }
}

// Through etcd, the workers' store is on the round's rank 0.
void take_etcd_store_address(Job& job) {
  job.plan.master_addr = job.etcd_agent->hosts().at(0);
  job.plan.master_port = static_cast<std::uint16_t>(job.etcd_agent->store_port());
}

void join_through_backend(Job& job, AgentOptions options) {
  try {
    if (job.via_etcd) {
      auto backend = std::make_unique<EtcdBackend>(std::move(options), job.etcd_endpoint,
                                                   job.etcd_store_socket->port());
      job.etcd_agent = backend.get();
      job.agent = std::move(backend);
    } else {
      job.agent = std::make_unique<StoreBackend>(std::move(options));
    }
    Membership m = job.agent->join();
    adopt(job.plan, m);
    job.plan.first_attempt = m.round;  // a late machine starts at the job's round
  } catch (const AgentError& e) {
    // The join ended for this launcher's own Ctrl-C: its words, not the signal's default
    // action, end the process.
    if (pending_stop_signal()) ignore_stop_signals();
    throw LaunchError(e.what(), e.exit_code());
  }
}

}  // namespace

void join_machines(Job& job) {
  LaunchPlan& plan = job.plan;
  if (plan.num_machines <= 1) return;
  AgentOptions options = agent_options(job);
  job.agent_keys = fmt::format("xlaunch/{}/", options.run_id);
  announce_join(job, options);
  const bool is_elastic = options.elastic();
  const bool by_arrival = plan.machine_rank < 0;
  join_through_backend(job, std::move(options));
  if (job.etcd_agent) {
    take_etcd_store_address(job);
    if (plan.machine_rank == 0) serve_store(job, std::move(*job.etcd_store_socket));
    if (!is_elastic) job.etcd_store_socket.reset();  // elastic: a later round's rank 0 needs it
    say("xlaunch: machine {} of {} (through etcd), the workers' store at {}:{}\n",
        plan.machine_rank, plan.num_machines, plan.master_addr, plan.master_port);
  }
  if (is_elastic) {
    say("xlaunch: round {}: machine {} of {}, world size {}\n", plan.first_attempt,
        plan.machine_rank, plan.num_machines, plan.world_size);
  } else if (by_arrival && !job.etcd_agent) {
    say("xlaunch: machine {} of {} (by arrival), world size {}\n", plan.machine_rank,
        plan.num_machines, plan.world_size);
  }
}

void begin_attempt(Job& job, int attempt) {
  LaunchPlan& plan = job.plan;
  if (attempt == plan.first_attempt) return;
  // Each attempt starts from an empty store (on every machine together).
  if (!job.agent) {
    job.store->clear();
    return;
  }
  const int machines_before = plan.num_machines;
  adopt(plan, job.agent->begin_round(attempt, [&] {
    if (job.store) job.store->clear(job.join.elastic ? job.agent_keys : std::string());
  }));
  if (job.etcd_agent && job.join.elastic) {
    // The round's rank 0 hosts the workers' store: a new one when rank 0 was lost.
    take_etcd_store_address(job);
    if (plan.machine_rank == 0 && !job.store && job.etcd_store_socket) {
      serve_store(job, std::move(*job.etcd_store_socket));
      job.etcd_store_socket.reset();
    }
  }
  if (plan.num_machines != machines_before || job.join.elastic) {
    say("xlaunch: round {}: machine {} of {}, world size {}\n", attempt, plan.machine_rank,
        plan.num_machines, plan.world_size);
  }
}

}  // namespace xlaunch::job
