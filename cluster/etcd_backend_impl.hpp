// EtcdBackend's state, private to its files: etcd_backend.cpp (the shared state and what
// every part reads: members, layouts, failures), etcd_join.cpp (the lease and the join),
// etcd_round.cpp (rounds after the first and their verdicts) and etcd_monitor.cpp (the
// lease's keeper and the watch for failures, lost launchers and newcomers).
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cluster/etcd_backend.hpp"
#include "cluster/etcd_client.hpp"
#include "cluster/etcd_layout.hpp"
#include "cluster/membership.hpp"

namespace xlaunch::cluster {

struct EtcdBackend::Impl {
  using Steady = std::chrono::steady_clock;
  using milliseconds = std::chrono::milliseconds;

  AgentOptions o;
  etcd::Client client;
  milliseconds interval;  // granularity of waits and watches
  std::int64_t lease = 0;
  int store_port = 0;  // this launcher's
  etcd::Decision decision;
  std::atomic<int> rank{-1};  // the keeper reads it while join() sets it

  std::mutex mu;
  std::condition_variable wake;
  std::atomic<bool> stopping{false};
  std::atomic<int> round{0};
  std::optional<FailureRecord> fatal;  // guarded by mu: etcd lost, or our lease expired
  OnStop on_stop;                      // set before the monitor starts
  int reported = -1;                   // guarded by mu: the last round on_stop was called for
  std::thread keeper;
  std::thread monitor;
  // Elastic: every launcher seen registered, so that a lost one is named with its pid.
  std::map<std::int64_t, JoinRecord> known;  // guarded by mu

  Impl(AgentOptions options, const std::string& endpoints);

  std::string key(std::string_view suffix) const { return etcd::job_key(o.run_id, suffix); }
  std::string rkey(int r, std::string_view suffix) const {
    return etcd::round_key(o.run_id, r, suffix);
  }

  // --- etcd_backend.cpp: state every part reads --------------------------------------------
  std::string host_of(int m);
  void notify(int r, const FailureRecord& record);
  std::optional<FailureRecord> fatal_now();
  void set_fatal(const FailureRecord& record);
  FailureRecord lost_record(int m);
  FailureRecord etcd_lost(const std::string& why) const;
  std::set<std::int64_t> alive_leases(std::int64_t* revision = nullptr);
  void wait_out_unreachable(std::optional<Steady::time_point>& failing_since);
  void wait_change(std::int64_t revision, milliseconds timeout);
  etcd::Decision decision_now();
  std::vector<etcd::Member> list_members(std::int64_t* revision = nullptr);
  std::optional<std::pair<int, etcd::Decision>> latest_layout(std::int64_t* revision);
  bool adopt(int r, const etcd::Decision& d);
  Membership membership(int r) const;
  FailureRecord report_failure(int round, const FailureRecord& record);
  // The decision at `k`, checked against this job's number of machines (MalformedRecord).
  etcd::Decision decision_at(std::string_view text, const std::string& k) const;
  // What the failure (or verdict) at `k` says: its record, or the malformed record's failure.
  FailureRecord failure_at(std::string_view text, const std::string& k) const {
    return cluster::failure_at(text, k, o.run_id);
  }

  // --- etcd_join.cpp -----------------------------------------------------------------------
  // A stop signal (Ctrl-C) that came during the join: thrown between its waits.
  struct Interrupted {
    int signal;
  };
  bool stop_checks = true;  // off once the signal is the supervisor's (main thread only)
  std::optional<int> stop_signal() const;
  void check_stop() const;
  // Interrupted while a fixed job forms: an error decision naming this launcher ends the
  // join for all, unless a decision stands already (then that one is followed).
  etcd::Decision withdraw(int signal);
  milliseconds grant_lease();
  void register_member(const JoinRecord& me);
  Membership fixed_join();
  void clear_stale_job();
  etcd::Decision decide_fixed(Steady::time_point deadline);
  Membership elastic_join();
  std::optional<etcd::Decision> decide_first_round(std::vector<etcd::Member> members,
                                                   const LastCall& last_call);
  AgentError not_taken_in(const std::optional<std::pair<int, etcd::Decision>>& latest,
                          const std::vector<etcd::Member>& members) const;
  template <class Step>
  auto joining(Step&& step);

  // --- etcd_round.cpp ----------------------------------------------------------------------
  Membership elastic_round(int r, const std::function<void()>& clear_store);
  std::optional<etcd::Decision> decide_round(int r, const etcd::Decision& previous,
                                             const std::vector<etcd::Member>& members,
                                             const std::function<void()>& clear_store,
                                             Steady::time_point deadline);
  template <typename Op>
  std::optional<FailureRecord> retrying(Op op);

  // --- etcd_monitor.cpp --------------------------------------------------------------------
  void keep_loop(milliseconds ttl);
  void machine_lost(int r, int m);
  void monitor_loop();
  std::int64_t resync(int r);
  void on_event(const etcd::WatchEvent& e);
  void newcomer(int r, const etcd::Member& m);
};

}  // namespace xlaunch::cluster
