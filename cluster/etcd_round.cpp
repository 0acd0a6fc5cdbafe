// Rounds after the join through etcd: rank 0 empties the workers' store and says go (an
// elastic job's first surviving member re-forms the job first), and at a round's end the
// first launcher that sees every machine done or lost writes the verdict.
#include <fmt/format.h>

#include <algorithm>

#include "cluster/blame.hpp"
#include "cluster/etcd_backend_impl.hpp"

namespace xlaunch::cluster {

using namespace etcd;

using std::chrono::milliseconds;
using Steady = std::chrono::steady_clock;

/// Runs `op` until it succeeds; etcd unreachable for heartbeat_timeout returns its record.
template <typename Op>
std::optional<FailureRecord> EtcdBackend::Impl::retrying(Op op) {
  auto since = Steady::now();
  while (true) {
    if (auto f = fatal_now()) return f;
    try {
      op();
      return std::nullopt;
    } catch (const Error& e) {
      if (!e.unreachable()) throw;
      if (Steady::now() - since >= o.heartbeat_timeout) return etcd_lost(e.what());
      std::unique_lock lock(mu);
      wake.wait_for(lock, interval, [&] { return stopping.load(); });
    }
  }
}

Membership EtcdBackend::begin_round(int round, const std::function<void()>& clear_store) {
  Impl& s = *impl_;
  if (s.o.elastic()) {
    try {
      return s.elastic_round(round, clear_store);
    } catch (const Error& e) {
      throw AgentError(fmt::format("lost etcd while the job re-formed: {}", e.what()), 1);
    } catch (const std::invalid_argument& e) {
      throw AgentError(fmt::format("malformed xlaunch record in etcd: {}", e.what()), 1);
    }
  }
  s.round = round;
  const std::string go = s.rkey(round, "go");
  std::optional<FailureRecord> lost;
  try {
    if (s.rank == 0) {
      clear_store();
      lost = s.retrying([&] { s.client.create(go, "1"); });
    } else {
      bool started = false;
      while (!started && !lost) {
        std::int64_t revision = 0;
        lost = s.retrying([&] {
          auto r = s.client.get(go);
          revision = r.revision;
          started = !r.kvs.empty();
          if (!started && !s.alive_leases().contains(s.decision.leases[0]))
            throw AgentError(fmt::format("job failed: {}", s.lost_record(0).describe()), 1);
        });
        if (!started && !lost) s.wait_change(revision, s.interval * 5);
      }
    }
  } catch (const Error& e) {
    throw AgentError(fmt::format("etcd refused the round's start: {}", e.what()), 1);
  }
  if (lost) throw AgentError(fmt::format("job failed: {}", lost->describe()), lost->exit_code);
  return Membership{std::get<Layout>(s.decision.outcome), s.rank, round};
}

/// Elastic round r >= 1: the first surviving member of the last round decides it (and
/// empties its workers' store); the others wait for its layout.
Membership EtcdBackend::Impl::elastic_round(int r, const std::function<void()>& clear_store) {
  const Decision previous = decision_now();
  const auto deadline = Steady::now() + o.rdzv_timeout;
  std::optional<Steady::time_point> failing_since;
  while (true) {
    try {
      if (auto f = fatal_now()) throw AgentError(fmt::format("job failed: {}", f->describe()), 1);
      std::int64_t revision = 0;
      auto layout = client.get(rkey(r, "layout"));
      revision = layout.revision;
      if (!layout.kvs.empty()) {
        if (adopt(r, decision_at(layout.kvs[0].value, rkey(r, "layout")))) return membership(r);
        throw AgentError(fmt::format("the elastic job re-formed without this launcher ({}, pid "
                                     "{}) in round {}",
                                     o.host, o.pid, r),
                         1);
      }
      auto members = list_members();
      std::set<std::int64_t> alive;
      for (const Member& m : members) alive.insert(m.lease);
      const std::optional<std::int64_t> decider = first_alive(previous.leases, alive);
      if (decider == lease) {
        if (auto got = decide_round(r, previous, members, clear_store, deadline)) {
          if (adopt(r, *got)) return membership(r);
          continue;
        }
      } else if (!decider && Steady::now() >= deadline) {
        throw AgentError("the elastic job lost all its machines", 1);
      }
      wait_change(revision,
                  std::clamp(std::chrono::duration_cast<milliseconds>(deadline - Steady::now()),
                             milliseconds(1), interval * 10));
    } catch (const Error& e) {
      if (!e.unreachable()) throw;
      wait_out_unreachable(failing_since);
      continue;
    }
    failing_since.reset();
  }
}

// The decider of round r: survivors in their order (rank 0 keeps the store), then
// newcomers by arrival. Returns round r's decision (this one's, or one made first), nullopt
// while fewer than MIN are in; throws once that lasted --rdzv_timeout.
std::optional<Decision> EtcdBackend::Impl::decide_round(int r, const Decision& previous,
                                                        const std::vector<Member>& members,
                                                        const std::function<void()>& clear_store,
                                                        Steady::time_point deadline) {
  auto [chosen, lost] = next_round(previous, members, o.max_machines);
  {
    std::lock_guard lock(mu);
    for (JoinRecord& gone : lost)
      if (auto it = known.find(previous.leases.at(gone.machine_rank)); it != known.end())
        gone.pid = it->second.pid;
  }
  if (static_cast<int>(chosen.size()) >= o.min_machines) {
    const auto& prior = std::get_if<Layout>(&previous.outcome);
    Decision d = elastic_decision(chosen, prior ? prior->run_id : o.job_run_id);
    clear_store();  // before the layout: no worker of round r has started yet
    auto won = client.create(rkey(r, "layout"), encode(d));
    return won.created ? d : decision_at(won.existing->value, rkey(r, "layout"));
  }
  if (Steady::now() >= deadline) {
    std::vector<JoinRecord> present;
    for (const Member& m : chosen) present.push_back(m.record);
    throw AgentError(too_few_machines(present, lost, o.min_machines, o.rdzv_timeout));
  }
  return std::nullopt;
}

std::optional<FailureRecord> EtcdBackend::finish_round(int round,
                                                       std::optional<FailureRecord> local) {
  Impl& s = *impl_;
  if (local) s.report_failure(round, *local);
  const int n = static_cast<int>(s.decision.leases.size());
  try {
    if (auto f =
            s.retrying([&] { s.client.put(s.rkey(round, fmt::format("done/{}", s.rank)), "1"); }))
      return f;
    while (true) {
      std::optional<std::string> verdict;
      std::int64_t revision = 0;
      auto f = s.retrying([&] {
        auto keys = s.client.get_prefix(s.rkey(round, ""));
        revision = keys.revision;
        std::set<int> done;
        std::optional<std::string> failure;
        for (const auto& kv : keys.kvs) {
          if (kv.key == s.rkey(round, "verdict")) verdict = kv.value;
          if (kv.key == s.rkey(round, "failure")) failure = kv.value;
          for (int m = 0; m < n; ++m)
            if (kv.key == s.rkey(round, fmt::format("done/{}", m))) done.insert(m);
        }
        if (verdict) return;
        auto alive = s.alive_leases();
        bool all = true;
        for (int m = 0; m < n; ++m) {
          if (done.contains(m)) continue;
          if (alive.contains(s.decision.leases[m])) {
            all = false;
          } else if (!failure) {
            failure = cluster::encode(s.report_failure(round, s.lost_record(m)));
          }
        }
        if (!all) return;
        const std::string mine = failure ? *failure : encode_verdict(std::nullopt);
        auto won = s.client.create(s.rkey(round, "verdict"), mine);
        verdict = won.created ? mine : won.existing->value;
      });
      if (f) return f;
      if (verdict) return decode_verdict(*verdict, s.rkey(round, "verdict"));
      s.wait_change(revision, s.interval * 5);
    }
  } catch (const MalformedRecord& e) {
    return malformed_failure(e, s.o.run_id);
  } catch (const Error& e) {
    return s.etcd_lost(e.what());
  }
}

}  // namespace xlaunch::cluster
