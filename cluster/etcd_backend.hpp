// The join through etcd (--rdzv_backend etcd / etcd-v2): launchers register under
// "/xlaunch/<run_id>/" on leases they keep alive, the first to see enough of them decides
// the job in one transaction, and a launcher whose lease expires is lost. No launcher has
// to start first; rank 0 of the job hosts the workers' store. Keys: etcd_layout.hpp.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cluster/agent.hpp"

namespace xlaunch::cluster::etcd {

struct BackendOptions {
  std::string run_id;     // --rdzv_id: names the keys
  std::string endpoints;  // --rdzv_endpoint: "host:port[,host:port...]"
  int num_machines = 1;
  int machine_rank = -1;  // -1: assigned in arrival order
  std::string host;       // this machine's address, which the others use for rank 0's store
  long pid = 0;
  int local_processes = 1;
  std::string version;
  std::string settings;  // agreed_settings(...)
  std::optional<int> total_processes;
  std::chrono::milliseconds rdzv_timeout{std::chrono::seconds(900)};
  /// The lease's TTL: a launcher silent this long is lost. Also how long etcd may stay
  /// unreachable, at start or later, before this launcher gives up.
  std::chrono::milliseconds heartbeat_timeout{std::chrono::seconds(30)};
};

/// The job as this launcher sees it after the join.
struct Membership {
  Layout layout;
  int machine_rank = 0;
  std::vector<std::string> hosts;  // per machine rank; hosts[0] runs the workers' store
};

class Backend {
 public:
  using OnStop = std::function<void(int round, const FailureRecord&)>;

  /// Throws AgentError (exit 2) for endpoints that do not parse.
  explicit Backend(BackendOptions options);
  ~Backend();  // stops the threads and revokes the lease

  /// Registers and waits for the job to form. Throws AgentError: exit 1 when etcd cannot be
  /// reached within heartbeat_timeout or too few machines join within rdzv_timeout; exit 2
  /// when the machines disagree or the job formed without this launcher.
  Membership join();
  /// Watches for the round's failure and lost machines (after join); `on_stop` is called
  /// on the monitor thread at most once per round.
  void start_monitor(OnStop on_stop);
  /// Round r >= 1: machine 0 runs clear_store then announces the round; the others wait.
  void begin_round(int round, const std::function<void()>& clear_store);
  /// Publishes this machine's failure unless another came first; returns the winner.
  FailureRecord report_failure(int round, const FailureRecord& record);
  /// Waits for the round's verdict: its failure, or nullopt when every machine succeeded.
  std::optional<FailureRecord> finish_round(int round, std::optional<FailureRecord> local);
  void stop_monitor();
  /// Revokes the lease (the other launchers see this one leave at once); idempotent.
  void close(int exit_code);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xlaunch::cluster::etcd
