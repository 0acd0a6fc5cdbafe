#include "cluster/membership.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "cluster/seconds.hpp"

namespace xlaunch::cluster {

namespace {

std::string names(const std::vector<JoinRecord>& records) {
  std::vector<std::string> out;
  for (const JoinRecord& r : records) out.push_back(fmt::format("{} (pid {})", r.host, r.pid));
  return out.empty() ? "none" : fmt::format("{}", fmt::join(out, ", "));
}

}  // namespace

bool first_round_ready(int arrived, int min_machines, int max_machines, bool last_call_over) {
  if (arrived >= max_machines) return true;
  return arrived >= min_machines && last_call_over;
}

void LastCall::count(int arrived, Clock::time_point now) {
  if (arrived < min_machines_) {
    since_.reset();  // one left (withdrew, or its lease ran out): MIN are not in any more
  } else if (!since_) {
    since_ = now;
  }
}

bool LastCall::over(Clock::time_point now) const { return since_ && now - *since_ >= timeout_; }

std::chrono::milliseconds LastCall::left(Clock::time_point now) const {
  if (!since_) return std::chrono::milliseconds(0);
  return std::chrono::duration_cast<std::chrono::milliseconds>(timeout_ - (now - *since_));
}

std::vector<int> next_members(const std::vector<int>& members, const std::set<int>& lost_slots,
                              const std::vector<int>& waiting, int max_machines) {
  std::vector<int> next;
  for (int slot : members) {
    if (!lost_slots.contains(slot)) next.push_back(slot);
  }
  for (int slot : waiting) {
    if (static_cast<int>(next.size()) >= max_machines) break;
    if (!lost_slots.contains(slot) && std::find(next.begin(), next.end(), slot) == next.end()) {
      next.push_back(slot);
    }
  }
  return next;
}

bool admits_newcomer(int members, int waiting, int max_machines, int round, int max_restarts) {
  return waiting > 0 && members < max_machines && round < max_restarts;
}

std::variant<Layout, JoinProblem> elastic_layout(std::vector<JoinRecord> records,
                                                 const std::vector<int>& slots,
                                                 const std::string& run_id) {
  const int n = static_cast<int>(records.size());
  for (int m = 0; m < n; ++m) records[m].machine_rank = m;
  auto decision = decide_layout(records, n, std::nullopt);
  if (auto* layout = std::get_if<Layout>(&decision)) {
    layout->run_id = run_id;
    layout->slots = slots;
  }
  return decision;
}

FailureRecord machine_joined(const JoinRecord& newcomer, int rank) {
  FailureRecord r;
  r.machine_rank = rank;
  r.host = newcomer.host;
  r.exit_code = 1;
  r.restartable = true;
  r.cause = fmt::format("joined the job (pid {}); re-forming it", newcomer.pid);
  return r;
}

FailureRecord machine_left(int rank, const std::string& host,
                           std::chrono::milliseconds heartbeat_timeout) {
  FailureRecord r;
  r.machine_rank = rank;
  r.host = host;
  r.exit_code = 1;
  r.restartable = true;
  r.cause = fmt::format(
      "launcher lost: no heartbeat for {:g}s (--heartbeat_timeout); re-forming "
      "the job without it",
      seconds(heartbeat_timeout));
  return r;
}

bool is_membership_change(const FailureRecord& record) {
  return record.restartable && record.rank < 0;
}

JoinProblem too_few_to_start(const std::vector<JoinRecord>& joined, int min_machines,
                             std::chrono::milliseconds timeout) {
  return JoinProblem{1, fmt::format("only {} of the minimum {} machines joined within "
                                    "--rdzv_timeout {:g}s (joined: {}); start more launchers "
                                    "with the same --main_process_ip/port, or lower MIN",
                                    joined.size(), min_machines, seconds(timeout), names(joined))};
}

JoinProblem too_few_machines(const std::vector<JoinRecord>& present,
                             const std::vector<JoinRecord>& lost, int min_machines,
                             std::chrono::milliseconds timeout) {
  return JoinProblem{
      1, fmt::format("{} machine{} left, fewer than the minimum {} (--nnodes {}:...), and none "
                     "joined within --rdzv_timeout {:g}s; lost: {}; present: {}. Restart the "
                     "lost machines' launchers, or lower MIN",
                     present.size(), present.size() == 1 ? "" : "s", min_machines, min_machines,
                     seconds(timeout), names(lost), names(present))};
}

}  // namespace xlaunch::cluster
