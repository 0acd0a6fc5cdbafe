// Elastic jobs (--nnodes MIN:MAX): who is in each round, decided by the first machine (the
// store's host) from the launchers present. Pure; the store backend applies it.
//
// Torchrun's c10d rendezvous semantics: the job starts once MIN machines have joined, after
// waiting last_call_timeout for more (at once when MAX are in); machine ranks follow join
// order; a lost machine or a newcomer (while fewer than MAX run) stops every worker and a
// new round re-forms the job from the machines present.
#pragma once

#include <chrono>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "cluster/agent.hpp"

namespace xlaunch::cluster {

/// Whether round 0 can start: `arrived` launchers are in; the last call is over when
/// last_call_timeout has passed since the MIN-th arrived.
bool first_round_ready(int arrived, int min_machines, int max_machines, bool last_call_over);

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

/// Below MIN after a loss, when nobody came within the join timeout: names the lost ones.
JoinProblem too_few_machines(const std::vector<JoinRecord>& present,
                             const std::vector<JoinRecord>& lost, int min_machines,
                             std::chrono::milliseconds timeout);

}  // namespace xlaunch::cluster
