#include "job/store_hosting.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "launcher/capacity.hpp"
#include "launcher/console.hpp"
#include "launcher/exit_status.hpp"
#include "launcher/launch_error.hpp"
#include "rendezvous/store_error.hpp"

namespace xlaunch::job {

using namespace launcher;

namespace {

[[noreturn]] void cannot_host(const rendezvous::StoreError& e, std::uint16_t port) {
  throw LaunchError(fmt::format("cannot host the store: {}", e.what()), exit_status::kFailure,
                    port ? "choose another --main_process_port, or 0 for a free one" : "");
}

rendezvous::ListeningSocket bind_store(const std::string& host, std::uint16_t port) {
  try {
    return rendezvous::ListeningSocket::bind(host, port);
  } catch (const rendezvous::StoreError& e) {
    cannot_host(e, port);
  }
}

// Machine 0's store, or nullopt when this launcher joins instead: torchrun's c10d backend
// hosts when the endpoint names this machine and, when another launcher of the job on this
// host already bound the port, joins it as a client (only an explicit is_host=true insists).
std::optional<rendezvous::ListeningSocket> bind_or_join(Job& job) {
  LaunchPlan& plan = job.plan;
  try {
    return rendezvous::ListeningSocket::bind(plan.bind_host, plan.master_port);
  } catch (const rendezvous::AddressInUse& e) {
    if (!job.join.host_or_join) cannot_host(e, plan.master_port);
  } catch (const rendezvous::StoreError& e) {
    cannot_host(e, plan.master_port);
  }
  say("xlaunch: the store's port {}:{} is already taken on this machine, presumably by "
      "another launcher of this job: joining it (--rdzv_conf is_host=true makes this an "
      "error)\n",
      plan.master_addr, plan.master_port);
  plan.machine_rank = -1;  // by arrival, from the join
  job.join.hosts_elastic_store = false;
  return std::nullopt;
}

}  // namespace

void host_store(Job& job) {
  LaunchPlan& plan = job.plan;
  // Only machine 0 hosts the store; the others join it.
  if (job.via_etcd) {
    job.etcd_store_socket.emplace(bind_store(plan.bind_host, 0));
  } else if (plan.machine_rank == 0) {
    // One machine: listen where the workers are told to connect (under srun -N1, MASTER_ADDR
    // is the node's name, which resolves to the node's own address, not 127.0.0.1).
    if (plan.num_machines == 1 && !job.settings.bind_addr) plan.bind_host = plan.master_addr;
    std::optional<rendezvous::ListeningSocket> socket = bind_or_join(job);
    if (!socket) return;
    plan.master_port = socket->port();
    serve_store(job, std::move(*socket));
  }
}

void serve_store(Job& job, rendezvous::ListeningSocket socket) {
  rendezvous::ServerOptions options;
  // The console never blocks: a full stderr must not stop the store that every rank uses.
  options.log_sink = [](std::string_view line) { console_say(line); };
  if (const auto max_open_files = rendezvous::raise_open_file_limit()) {
    options.limits.max_connections = std::min<std::uint64_t>(
        options.limits.max_connections, store_connection_budget(job.plan, *max_open_files));
  }
  job.store.emplace(std::move(socket), std::move(options));
  // Its thread inherits a mask that keeps stop signals for the main thread, so none can
  // end the launcher by its default action before the supervisor's handlers exist.
  StopSignalsHeld held;
  job.store->start();
}

}  // namespace xlaunch::job
