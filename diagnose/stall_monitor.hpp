// Watches a running attempt for the supervisor, once a second on its event loop: the stall
// signal (stall_detect.hpp) and its report, a rank dialing the wrong address
// (stall_dial.hpp), and Python stacks on request (`xlaunch stacks`, through a socket).
// The supervisor feeds it each worker's start, output and end.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rendezvous/store_server.hpp"

namespace xlaunch::diagnose {

class StallMonitor {
 public:
  /// This machine's store clients, when this machine hosts the store.
  using StoreClients = std::function<std::vector<rendezvous::StoreServer::ClientInfo>()>;

  /// What the launch asks of the monitor (the supervisor takes it from the plan).
  struct Options {
    std::string run_id;
    std::chrono::milliseconds stall_timeout{0};  // 0: no stall detection
    bool stop_on_stall = false;                  // --on_stall stop
    bool python_stacks = true;                   // ship the faulthandler sitecustomize
    bool python_ranks = true;                    // false: no rank runs Python, ship nothing
    std::string registry_dir;      // where `xlaunch stacks` finds launchers (registry_dir())
    std::string run_cgroup_procs;  // the run's cgroup.procs, "" without one
    long guardian_pid = -1;        // the containment guardian (not the run's work)
    /// Called before the temporary folder is made, with where it will be and how its name
    /// starts, so that a killed launcher's guardian can remove it whenever it dies.
    std::function<void(const std::string& folder, const std::string& name_prefix)> before_temp_dir;
  };

  /// Where its messages go: the console, and the run's log (xlaunch.log).
  struct Output {
    std::function<void(std::string_view text)> say;
    std::function<void(std::string_view line)> log;
  };

  StallMonitor(boost::asio::io_context& io, Options options, Output output,
               StoreClients store_clients);
  ~StallMonitor();

  /// PYTHONPATH (the sitecustomize first), PYTHONFAULTHANDLER and the dump settings, added
  /// to a worker's environment (the launcher's Environment).
  void add_worker_env(std::map<std::string, std::string>& env) const;

  /// `store_addr`/`store_port`: where this attempt's workers find the store (an elastic job's
  /// store may move between rounds); a rank dialing elsewhere is reported.
  void begin_attempt(const std::string& store_addr, std::uint16_t store_port);
  void on_start(int local_rank, int rank, long pid);
  /// Every rank of the attempt was started (or the start-up was stopped): `xlaunch stacks`
  /// requests are answered from now on, the ones that came during the start-up first.
  void on_ranks_started();
  /// One read of a rank's output, at `when`: `lines` lines, the last non-empty one
  /// `last_line` (empty if none was). Called per read, not per line: a chatty rank writes
  /// millions of lines, and this is on the path that drains its pipe.
  void on_output(int local_rank, std::uint64_t lines, std::string_view last_line,
                 std::chrono::system_clock::time_point when);
  void on_end(int local_rank, std::string description);
  /// Cancels its timers and waits so that the attempt's loop can end.
  void end_attempt();

  /// What it made that a killed launcher would leave: its temporary folder (the
  /// sitecustomize and the dumps) and its `xlaunch stacks` socket; "" when none.
  const std::string& temp_dir() const;
  const std::string& socket_path() const;

  /// With --on_stall stop: called on the loop right after the report.
  std::function<void()> on_stall_stop;
  /// The last stall report of the run, as JSON.
  const std::optional<std::string>& stall_json() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xlaunch::diagnose
