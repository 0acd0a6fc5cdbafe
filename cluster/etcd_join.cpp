// The join through etcd: a lease kept alive by the keeper thread, a member record on it,
// and the job decided once (create-if-absent) by the first launcher that sees enough
// members: the whole job (fixed size) or round 0 (elastic).
#include <fmt/format.h>

#include <algorithm>

#include "cluster/blame.hpp"
#include "cluster/etcd_backend_impl.hpp"
#include "cluster/seconds.hpp"

namespace xlaunch::cluster {

using namespace etcd;

using std::chrono::milliseconds;
using Steady = std::chrono::steady_clock;

namespace {
// The longest a wait of the join lasts before it looks for a stop signal again (each wait is
// a watch request to etcd, shared by every launcher: not shorter).
constexpr milliseconds kJoinSlice{500};
}  // namespace

/// Runs a step of the join: etcd lost, or a record that is not xlaunch's, ends it.
template <class Step>
auto EtcdBackend::Impl::joining(Step&& step) {
  try {
    return step();
  } catch (const Error& e) {
    throw AgentError(
        fmt::format("lost etcd at {} while joining: {}", client.endpoints_text(), e.what()), 1);
  } catch (const std::invalid_argument& e) {  // MalformedRecord: what() names the key
    throw AgentError(fmt::format("{}; is another program using run id '{}'?", e.what(), o.run_id),
                     1);
  }
}

Membership EtcdBackend::join() {
  Impl& s = *impl_;
  try {
    const milliseconds ttl = s.grant_lease();
    s.keeper = std::thread([&s, ttl] { s.keep_loop(ttl); });
    Membership m = s.o.elastic() ? s.joining([&s] {
      JoinRecord me = s.o.record();
      me.machine_rank = -1;  // ranks follow arrival
      s.register_member(me);
      return s.elastic_join();
    })
                                 : s.fixed_join();
    s.stop_checks = false;  // from here on, a stop signal is the supervisor's
    return m;
  } catch (const Impl::Interrupted& stop) {
    // Not in a job yet: this launcher's lease (revoked as it ends) takes its record along.
    throw AgentError(join_interrupted(s.o.record(), stop.signal));
  }
}

std::optional<int> EtcdBackend::Impl::stop_signal() const {
  return stop_checks ? o.pending_stop() : std::nullopt;
}

void EtcdBackend::Impl::check_stop() const {
  if (const std::optional<int> signal = stop_signal()) throw Interrupted{*signal};
}

// As the store's join does (StoreBackend::Impl::withdraw).
Decision EtcdBackend::Impl::withdraw(int signal) {
  stop_checks = false;
  Decision d;
  d.outcome = join_interrupted(o.record(), signal);
  auto won = client.create(key("layout"), encode(d));
  return won.created ? d : decision_at(won.existing->value, key("layout"));
}

// Returns the lease's TTL.
milliseconds EtcdBackend::Impl::grant_lease() {
  const auto ttl = std::max(milliseconds(2000), o.heartbeat_timeout);
  // etcd must answer at start within heartbeat_timeout: a wrong endpoint fails fast.
  const auto reach_deadline = Steady::now() + o.heartbeat_timeout;
  while (true) {
    try {
      lease = client
                  .grant_lease(std::chrono::duration_cast<std::chrono::seconds>(ttl).count() +
                               (ttl.count() % 1000 != 0))
                  .id;
      return ttl;
    } catch (const Error& e) {
      check_stop();
      if (!e.unreachable() || Steady::now() >= reach_deadline) {
        throw AgentError(fmt::format("cannot join through etcd: {}; check that etcd runs at {} "
                                     "(--rdzv_endpoint, or --main_process_ip/--main_process_port) "
                                     "and that this machine can reach it",
                                     e.what(), client.endpoints_text()),
                         1);
      }
      std::this_thread::sleep_for(interval);
    }
  }
}

void EtcdBackend::Impl::register_member(const JoinRecord& me) {
  client.put(member_key(o.run_id, lease), encode_member(me, o.job_run_id, store_port), lease);
}

Membership EtcdBackend::Impl::fixed_join() {
  const auto deadline = Steady::now() + o.rdzv_timeout;
  decision = joining([this, deadline] {
    clear_stale_job();
    register_member(o.record());
    try {
      return decide_fixed(deadline);
    } catch (const Interrupted& stop) {
      return withdraw(stop.signal);
    }
  });
  if (const auto* problem = std::get_if<JoinProblem>(&decision.outcome)) throw AgentError(*problem);
  auto mine = rank_of(decision, lease);
  if (!mine) {
    throw AgentError(
        fmt::format("the job with run id '{}' formed without this launcher ({}, pid {}): its {} "
                    "machines had joined first; start exactly --num_machines launchers, or give "
                    "this one its own --rdzv_id",
                    o.run_id, o.host, o.pid, o.num_machines),
        2);
  }
  rank = *mine;
  return Membership{std::get<Layout>(decision.outcome), rank, 0};
}

// A layout left by an earlier job with this run id whose launchers are all gone is erased;
// one whose launchers still run is another job (exit 2).
void EtcdBackend::Impl::clear_stale_job() {
  auto old = client.get(key("layout"));
  if (old.kvs.empty()) return;
  Decision previous = decision_at(old.kvs[0].value, key("layout"));
  if (first_alive(previous.leases, alive_leases())) {
    throw AgentError(fmt::format("a job with run id '{}' is already running through etcd at "
                                 "{} (rank 0 on {}); give this job its own --rdzv_id",
                                 o.run_id, client.endpoints_text(),
                                 previous.hosts.empty() ? "?" : previous.hosts[0]),
                     2);
  }
  client.erase_prefix(key("round/"));
  client.erase_prefix(key("layout"));
}

// The fixed job: decided by whoever first sees num_machines members (or read once decided).
Decision EtcdBackend::Impl::decide_fixed(Steady::time_point deadline) {
  while (true) {
    check_stop();
    if (auto f = fatal_now()) throw AgentError(fmt::format("cannot join: {}", f->cause), 1);
    auto layout = client.get(key("layout"));
    if (!layout.kvs.empty()) return decision_at(layout.kvs[0].value, key("layout"));
    std::vector<Member> members = decode_members(o.run_id, client.get_prefix(key("members/")).kvs);
    if (auto d = decide(members, o.num_machines, o.total_processes)) {
      auto won = client.create(key("layout"), encode(*d));
      return won.created ? *d : decision_at(won.existing->value, key("layout"));
    }
    if (Steady::now() >= deadline) {
      throw AgentError(too_few(members, o.num_machines, client.endpoints_text(), o.rdzv_timeout));
    }
    // From the first read on: a layout made between the two reads is not missed.
    wait_change(
        layout.revision,
        std::min(std::chrono::duration_cast<milliseconds>(deadline - Steady::now()), kJoinSlice));
  }
}

/// Elastic round 0, or the running job's next round for a newcomer.
Membership EtcdBackend::Impl::elastic_join() {
  const auto deadline = Steady::now() + o.rdzv_timeout;
  LastCall last_call(o.min_machines, o.last_call_timeout);  // timed by the first to arrive
  bool checked_stale = false;
  std::optional<Steady::time_point> failing_since;
  while (true) {
    try {
      if (auto f = fatal_now()) throw AgentError(fmt::format("cannot join: {}", f->cause), 1);
      std::int64_t revision = 0;
      auto latest = latest_layout(&revision);
      auto members = list_members();
      if (const std::optional<int> signal = stop_signal()) {
        // Not taken in: this launcher leaves, and the job goes on without it. Taken in
        // already, it is in the job: the signal is the supervisor's.
        if (!latest || !rank_of(latest->second, lease)) throw Interrupted{*signal};
        stop_checks = false;
      }
      if (latest && !checked_stale) {
        std::set<std::int64_t> alive;
        for (const Member& m : members) alive.insert(m.lease);
        if (!first_alive(latest->second.leases, alive)) {
          // Left by an earlier job with this run id whose launchers are all gone.
          client.erase_prefix(key("round/"));
          checked_stale = true;
          continue;
        }
      }
      checked_stale = true;
      if (latest) {
        if (adopt(latest->first, latest->second)) return membership(latest->first);
        // The job runs without this launcher: its monitors see it and re-form the job.
      } else if (!members.empty()) {
        last_call.count(static_cast<int>(members.size()), Steady::now());
        if (auto got = decide_first_round(members, last_call)) {
          if (adopt(0, *got)) return membership(0);
          continue;
        }
      }
      // Once MIN are in, the last call (not --rdzv_timeout) bounds the wait.
      if (Steady::now() >= deadline && (latest || !last_call.open())) {
        throw not_taken_in(latest, members);
      }
      auto wait = std::chrono::duration_cast<milliseconds>(deadline - Steady::now());
      if (last_call.open()) wait = last_call.left(Steady::now());
      wait_change(revision, std::clamp(wait, milliseconds(1), kJoinSlice));
    } catch (const Error& e) {
      if (!e.unreachable()) throw;
      wait_out_unreachable(failing_since);
      continue;
    }
    failing_since.reset();
  }
}

// The first to arrive decides round 0, so that one clock times the last call: once it is
// ready, returns round 0's decision (this one's, or one made first); else nullopt.
std::optional<Decision> EtcdBackend::Impl::decide_first_round(std::vector<Member> members,
                                                              const LastCall& last_call) {
  const int n = static_cast<int>(members.size());
  if (members.front().lease != lease ||
      !first_round_ready(n, o.min_machines, o.max_machines, last_call.over(Steady::now()))) {
    return std::nullopt;
  }
  members.resize(std::min(n, o.max_machines));
  Decision d = elastic_decision(members, members.front().job_run_id);
  auto won = client.create(rkey(0, "layout"), encode(d));
  return won.created ? d : decision_at(won.existing->value, rkey(0, "layout"));
}

// Why the join ends at --rdzv_timeout: the running job did not take this launcher in, or
// too few launchers came for round 0.
AgentError EtcdBackend::Impl::not_taken_in(const std::optional<std::pair<int, Decision>>& latest,
                                           const std::vector<Member>& members) const {
  if (latest) {
    return AgentError(
        fmt::format("the elastic job with run id '{}' did not take this launcher in "
                    "within --rdzv_timeout {:g}s: it runs {} machines (--nnodes ...:{}) "
                    "or has no restart left (--max_restarts)",
                    o.run_id, seconds(o.rdzv_timeout), latest->second.leases.size(),
                    o.max_machines),
        1);
  }
  return AgentError(too_few(members, o.min_machines, client.endpoints_text(), o.rdzv_timeout));
}

}  // namespace xlaunch::cluster
