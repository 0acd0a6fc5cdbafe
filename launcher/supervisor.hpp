// Runs the workers of a plan and watches them in one event loop (Boost.Asio): child exits
// (SIGCHLD), the launcher's own signals, the workers' output pipes and the kill timer. No
// polling interval anywhere.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "launcher/environment.hpp"
#include "launcher/failure_record.hpp"
#include "launcher/launch_plan.hpp"
#include "launcher/process.hpp"
#include "launcher/report.hpp"
#include "launcher/run_files.hpp"
#include "rendezvous/store_server.hpp"

namespace xlaunch::launcher {

class Supervisor {
 public:
  /// What the launcher adds around each attempt; every member is optional.
  struct AttemptHooks {
    /// Before each attempt's workers start (attempt 0, 1, ...): e.g. empty the store.
    std::function<void(int attempt)> before_attempt;
    /// On the loop thread, at most once per attempt, as soon as this machine's first worker
    /// fails or the launcher is interrupted (before the teardown): publish it.
    std::function<void(int attempt, const FailureRecord& local)> on_failure;
    /// After this machine's workers of the attempt ended (blocks): the job's failure of the
    /// attempt, or nullopt when every machine succeeded. Replaces the local outcome.
    std::function<std::optional<FailureRecord>(int attempt,
                                               const std::optional<FailureRecord>& local)>
        after_attempt;
    /// This machine's store clients, when it hosts the store: the stall report's store
    /// traffic and waits (docs/diagnose.md).
    std::function<std::vector<rendezvous::StoreServer::ClientInfo>()> store_clients;
    /// On the loop thread, when a worker process was started (for the GPU sampler's pids).
    std::function<void(int attempt, int rank, long pid)> on_worker_started;
  };

  /// `guardian` learns each worker's process group, and is never stopped as a leftover.
  Supervisor(const LaunchPlan& plan, const Environment& parent_env, RunFiles& files,
             std::string host, GroupGuardian& guardian);
  ~Supervisor();

  /// Runs attempts until one succeeds, the launcher is interrupted, or restarts are used
  /// up. Prints each failure's root cause to stderr. Blocks; call from the main thread.
  /// Restarts only when the job's failure is restartable (a worker failed), the same
  /// decision on every machine.
  RunSummary run(const AttemptHooks& hooks);

  /// Thread-safe: stops every worker of `attempt` (SIGTERM, then SIGKILL after
  /// --term_timeout) because of something outside this machine; `reason` is printed.
  /// Ignored when that attempt is over or already stopping.
  void request_stop(int attempt, std::string reason);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xlaunch::launcher
