#include "job/store_hosting.hpp"

#include <fmt/format.h>

#include "launcher/exit_status.hpp"
#include "launcher/launch_error.hpp"
#include "rendezvous/store_error.hpp"

namespace xlaunch::job {

using namespace launcher;

namespace {

rendezvous::ListeningSocket bind_store(const std::string& host, std::uint16_t port) {
  try {
    return rendezvous::ListeningSocket::bind(host, port);
  } catch (const rendezvous::StoreError& e) {
    throw LaunchError(fmt::format("cannot host the store: {}", e.what()), exit_status::kFailure,
                      port ? "choose another --main_process_port, or 0 for a free one" : "");
  }
}

}  // namespace

void host_store(Job& job) {
  rendezvous::raise_open_file_limit();
  LaunchPlan& plan = job.plan;
  // Only machine 0 hosts the store; the others join it.
  if (job.via_etcd) {
    job.etcd_store_socket.emplace(bind_store(plan.bind_host, 0));
  } else if (plan.machine_rank == 0) {
    // One machine: listen where the workers are told to connect (under srun -N1, MASTER_ADDR
    // is the node's name, which resolves to the node's own address, not 127.0.0.1).
    if (plan.num_machines == 1 && !job.settings.bind_addr) plan.bind_host = plan.master_addr;
    rendezvous::ListeningSocket socket = bind_store(plan.bind_host, plan.master_port);
    plan.master_port = socket.port();
    serve_store(job, std::move(socket));
  }
}

void serve_store(Job& job, rendezvous::ListeningSocket socket) {
  job.store.emplace(std::move(socket));
  // Its thread inherits a mask that keeps stop signals for the main thread, so none can
  // end the launcher by its default action before the supervisor's handlers exist.
  StopSignalsHeld held;
  job.store->start();
}

}  // namespace xlaunch::job
