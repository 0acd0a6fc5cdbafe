// Watches a running attempt for the supervisor, once a second on its event loop: the stall
// signal (stall_detect.hpp) and its report, a rank dialing the wrong address
// (stall_dial.hpp), and Python stacks on request (the launcher's SIGUSR1, `xlaunch stacks`).
// The supervisor feeds it each worker's start, output and end.
#pragma once

#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/environment.hpp"
#include "launcher/launch_plan.hpp"
#include "launcher/run_files.hpp"
#include "rendezvous/store_server.hpp"

namespace xlaunch::launcher {

class StallMonitor {
 public:
  /// This machine's store clients, when this machine hosts the store.
  using StoreClients = std::function<std::vector<rendezvous::StoreServer::ClientInfo>()>;

  StallMonitor(boost::asio::io_context& io, const LaunchPlan& plan, RunFiles& files,
               StoreClients store_clients);
  ~StallMonitor();

  /// PYTHONPATH (the sitecustomize first), PYTHONFAULTHANDLER and the dump settings.
  void add_worker_env(Environment& env) const;

  void begin_attempt(int attempt);
  void on_start(int local_rank, int rank, long pid);
  void on_output(int local_rank, std::string_view line);
  void on_end(int local_rank, std::string description);
  /// Cancels its timers and waits so that the attempt's loop can end.
  void end_attempt();

  /// With --on_stall stop: called on the loop right after the report.
  std::function<void()> on_stall_stop;
  /// The last stall report of the run, as JSON.
  const std::optional<std::string>& stall_json() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xlaunch::launcher
