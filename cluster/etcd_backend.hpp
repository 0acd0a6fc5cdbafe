// The join through etcd (--rdzv_backend etcd / etcd-v2): launchers register under
// "/xlaunch/<run_id>/" on leases they keep alive, the first to see enough of them decides
// the job in one transaction, and a launcher whose lease expires is lost (elastic jobs:
// each round is decided the same way and a newcomer or a loss re-forms the job). No
// launcher has to start first; rank 0 of the round hosts the workers' store. Keys:
// etcd_layout.hpp.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cluster/join_backend.hpp"

namespace xlaunch::cluster {

class EtcdBackend final : public JoinBackend {
 public:
  /// `endpoints`: --rdzv_endpoint, "host:port[,host:port...]" (AgentError exit 2 when it
  /// does not parse). options.machine_rank -1: ranks by arrival. options.heartbeat_timeout
  /// is the lease's TTL, and how long etcd may stay unreachable (at start or later).
  /// `store_port`: where this launcher's workers' store listens should it be rank 0 (every
  /// launcher binds one before the join; only rank 0's is used). Elastic options
  /// (MIN < MAX): one layout per round, round/<r>/layout; hosts() and store_port() then
  /// follow the round begin_round returned.
  EtcdBackend(AgentOptions options, std::string endpoints, int store_port);
  ~EtcdBackend() override;  // stops the threads and revokes the lease

  /// Throws AgentError: exit 1 when etcd cannot be reached within heartbeat_timeout or too
  /// few machines join within rdzv_timeout; exit 2 when the machines disagree or the job
  /// formed without this launcher.
  Membership join() override;
  void start_monitor(OnStop on_stop) override;
  Membership begin_round(int round, const std::function<void()>& clear_store) override;
  FailureRecord report_failure(int round, const FailureRecord& record) override;
  std::optional<FailureRecord> finish_round(int round, std::optional<FailureRecord> local) override;
  void stop_monitor() override;
  /// Revokes the lease (the other launchers see this one leave at once); idempotent.
  void close(int exit_code) override;

  /// After join: each machine rank's host; hosts()[0] runs the workers' store.
  const std::vector<std::string>& hosts() const;
  /// After join: the workers' store, on rank 0's host.
  int store_port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xlaunch::cluster
