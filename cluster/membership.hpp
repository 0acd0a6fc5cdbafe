// Elastic jobs (--nnodes MIN:MAX): who is in each round, decided by the first machine (the
// store's host) from the launchers present. Pure; the store backend applies it.
//
// Torchrun's c10d rendezvous semantics: the job starts once MIN machines have joined, after
// waiting last_call_timeout for more (at once when MAX are in); machine ranks follow join
// order; a lost machine or a newcomer (while fewer than MAX run) stops every worker and a
// new round re-forms the job from the machines present.
#pragma once

#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "cluster/agent.hpp"

namespace xlaunch::cluster {

/// Whether round 0 can start: `arrived` launchers are in; the last call is over when
/// last_call_timeout has passed since the MIN-th arrived.
bool first_round_ready(int arrived, int min_machines, int max_machines, bool last_call_over);

/// The last call before round 0: it opens the first time MIN launchers are in and lasts
/// last_call_timeout. Both backends time it on the launcher that decides round 0. Pure: the
/// caller passes the clock.
class LastCall {
 public:
  using Clock = std::chrono::steady_clock;
  LastCall(int min_machines, std::chrono::milliseconds timeout)
      : min_machines_(min_machines), timeout_(timeout) {}
  /// `arrived` launchers are in at `now`. Fewer than MIN close the call again: it opens
  /// anew, with its whole timeout, when MIN are back.
  void count(int arrived, Clock::time_point now);
  /// MIN launchers are in (since the call opened).
  bool open() const { return since_.has_value(); }
  bool over(Clock::time_point now) const;
  /// What is left of the call at `now` (negative once over); zero before it opens.
  std::chrono::milliseconds left(Clock::time_point now) const;

 private:
  int min_machines_;
  std::chrono::milliseconds timeout_;
  std::optional<Clock::time_point> since_;
};

/// The next round's members (arrival slots, rank order): the previous members not lost, in
/// their order (the host stays rank 0), then waiting newcomers by arrival, up to MAX.
std::vector<int> next_members(const std::vector<int>& members, const std::set<int>& lost_slots,
                              const std::vector<int>& waiting, int max_machines);

/// Whether a waiting newcomer is worth stopping the running round: there is room for it and
/// a restart left to re-form the job with.
bool admits_newcomer(int members, int waiting, int max_machines, int round, int max_restarts);

/// The layout of an elastic round: `records` in rank order (their machine ranks are
/// re-assigned 0..n-1), checked like a fixed job's (versions, agreed settings).
std::variant<Layout, JoinProblem> elastic_layout(std::vector<JoinRecord> records,
                                                 const std::vector<int>& slots,
                                                 const std::string& run_id);

/// Why a round stops for a change of members: restartable, no worker to blame (rank -1).
FailureRecord machine_joined(const JoinRecord& newcomer, int rank);
FailureRecord machine_left(int rank, const std::string& host,
                           std::chrono::milliseconds heartbeat_timeout);
bool is_membership_change(const FailureRecord& record);

/// Round 0 cannot start: fewer than MIN launchers (`joined`) came within the join timeout.
JoinProblem too_few_to_start(const std::vector<JoinRecord>& joined, int min_machines,
                             std::chrono::milliseconds timeout);

/// Below MIN after a loss, when nobody came within the join timeout: names the lost ones.
JoinProblem too_few_machines(const std::vector<JoinRecord>& present,
                             const std::vector<JoinRecord>& lost, int min_machines,
                             std::chrono::milliseconds timeout);

}  // namespace xlaunch::cluster
