// The join through machine 0's store (the default --rdzv_backend): keys under
// "xlaunch/<run_id>/", listed in agent.hpp and docs/multi-machine.md. The launcher with
// machine rank 0 hosts the store and decides; the others follow.
#pragma once

#include <memory>

#include "cluster/join_backend.hpp"

namespace xlaunch::cluster {

class StoreBackend final : public JoinBackend {
 public:
  explicit StoreBackend(AgentOptions options);
  ~StoreBackend() override;  // stops the monitor thread

  Membership join() override;
  void start_monitor(OnStop on_stop) override;
  Membership begin_round(int round, const std::function<void()>& clear_store) override;
  FailureRecord report_failure(int round, const FailureRecord& record) override;
  std::optional<FailureRecord> finish_round(int round, std::optional<FailureRecord> local) override;
  void stop_monitor() override;
  void close(int exit_code) override;

  /// Key of this run: "xlaunch/<run_id>/<suffix>".
  std::string key(std::string_view suffix) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xlaunch::cluster
