// Rounds after the join through the store: machine 0 empties the workers' store and says go
// (an elastic job's host re-forms the job first), and at a round's end machine 0 collects
// every machine's done/<m> and writes the verdict the others read.
#include "cluster/blame.hpp"
#include "cluster/membership.hpp"
#include "cluster/seconds.hpp"
#include "cluster/store_backend_impl.hpp"
#include "launcher/console.hpp"

namespace xlaunch::cluster {

using launcher::say;
using rendezvous::StoreError;
using rendezvous::StoreTimeout;
using StoreClient = rendezvous::StoreClient;
using Steady = std::chrono::steady_clock;

Membership StoreBackend::begin_round(int round, const std::function<void()>& clear_store) {
  Impl& s = *impl_;
  if (s.elastic()) {
    try {
      return s.o.machine_rank == 0 ? s.elastic_host_next_round(round, clear_store)
                                   : s.elastic_next_round(round);
    } catch (const StoreError& e) {
      throw AgentError(fmt::format("lost machine 0's store at {}:{} between rounds: {}",
                                   s.o.store_host, s.o.store_port, e.what()),
                       1);
    } catch (const MalformedRecord& e) {
      throw AgentError(malformed_failure(e, s.o.run_id).cause, 1);
    }
  }
  s.round = round;
  if (s.o.machine_rank == 0) {
    clear_store();
    s.client.reset();  // the clear closed nothing of ours, but start clean anyway
    s.with_client([&](StoreClient& c) {
      c.set(s.rkey(round, "go"), "1");
      return 0;
    });
    {
      std::lock_guard lock(s.mu);
      s.lost.clear();
    }
    s.watching_lost = true;
    return Membership{s.layout, 0};
  }
  if (auto lost = s.wait_key(s.rkey(round, "go"))) {
    throw AgentError(fmt::format("job failed: {}", lost->describe()), lost->exit_code);
  }
  return Membership{s.layout, s.o.machine_rank};
}

// Round r >= 1 of an elastic job, on the host: the members not lost and the newcomers,
// up to MAX; below MIN it waits up to --rdzv_timeout for launchers to arrive. The caller's
// clear_store empties the workers' keys (the launchers' records stay) before publishing.
Membership StoreBackend::Impl::elastic_host_next_round(int r,
                                                       const std::function<void()>& clear_store) {
  if (!client) client = connect(o.heartbeat_timeout);
  StoreClient& c = *client;
  std::set<int> lost_slots;
  std::vector<int> current;
  {
    std::lock_guard lock(mu);
    current = layout.slots;
    for (int m : lost) lost_slots.insert(layout.slots.at(m));
  }
  const std::vector<JoinRecord> lost_records =
      records_of(std::vector<int>(lost_slots.begin(), lost_slots.end()));
  const auto deadline = Steady::now() + o.rdzv_timeout;
  bool told = false;
  for (;;) {
    poll_arrivals(c);
    std::vector<int> next;
    {
      std::lock_guard lock(arr_mu);
      next = next_members(current, lost_slots, waiting, o.max_machines);
    }
    if (static_cast<int>(next.size()) >= o.min_machines) {
      if (!claim_members(c, next)) continue;  // one withdrew: choose again
      round = r;
      // The round's workers expect an empty store (PyTorch 2.x adds no per-attempt prefix
      // under an agent store); clear before the layout lets any machine start them.
      clear_store();
      Membership m = publish_round(c, r, next);
      watching_lost = true;
      return m;
    }
    if (!told) {
      told = true;
      say("xlaunch: {} machine{} left, fewer than the minimum {}; waiting up to {:g}s "
          "(--rdzv_timeout) for more to join\n",
          next.size(), next.size() == 1 ? "" : "s", o.min_machines, seconds(o.rdzv_timeout));
    }
    if (Steady::now() >= deadline) {
      fail_round(c, r,
                 too_few_machines(records_of(next), lost_records, o.min_machines, o.rdzv_timeout));
    }
    try {
      c.wait({key(fmt::format("arrival/{}", known_now() + 1))}, interval);
    } catch (const StoreTimeout&) {
    }
  }
}

// Round r >= 1 of an elastic job, on the others: wait for the host's layout.
Membership StoreBackend::Impl::elastic_next_round(int r) {
  round = r;
  if (auto lost_record = wait_key(rkey(r, "layout"))) {
    throw AgentError(fmt::format("job failed: {}", lost_record->describe()),
                     lost_record->exit_code);
  }
  return with_client([&](StoreClient& c) {
    const std::string round_layout = rkey(r, "layout");
    auto decision = decode_layout(c.get(round_layout), round_layout);
    if (const auto* problem = std::get_if<JoinProblem>(&decision)) {
      c.set(key(fmt::format("layout_ack/{}", slot)), "1");
      throw AgentError(*problem);
    }
    check_elastic_layout(std::get<Layout>(decision), o.max_machines, round_layout);
    auto m = find_me(c, std::get<Layout>(decision));
    if (m) m->round = r;
    if (!m) {
      throw AgentError(fmt::format("machine 0 left this launcher out of round {} (it missed "
                                   "its heartbeats for --heartbeat_timeout {:g}s)",
                                   r, seconds(o.heartbeat_timeout)),
                       1);
    }
    return *m;
  });
}

std::optional<FailureRecord> StoreBackend::finish_round(int round,
                                                        std::optional<FailureRecord> local) {
  Impl& s = *impl_;
  if (local) s.report_failure(round, *local);
  try {
    s.with_client([&](StoreClient& c) {
      c.set(s.rkey(round, fmt::format("done/{}", s.o.machine_rank)), "1");
      return 0;
    });
    return s.o.machine_rank == 0 ? s.host_verdict(round) : s.follower_verdict(round);
  } catch (const MalformedRecord& e) {
    return malformed_failure(e, s.o.run_id);
  } catch (const StoreError& e) {
    if (s.o.machine_rank == 0) throw;
    return s.machine0_lost(e.what());
  }
}

// Machine 0: once every machine is done or lost, the round's first failure (or none) is the
// verdict; the store stays up until every live machine has read it.
std::optional<FailureRecord> StoreBackend::Impl::host_verdict(int r) {
  for (int m = 1; m < o.num_machines; ++m) {
    const std::string done = rkey(r, fmt::format("done/{}", m));
    for (;;) {
      {
        std::lock_guard lock(mu);
        if (lost.contains(m)) break;
      }
      try {
        with_client([&](StoreClient& c) {
          c.wait({done}, interval);
          return 0;
        });
        break;
      } catch (const StoreTimeout&) {
      }
    }
  }
  const std::string failure_key = rkey(r, "failure");
  std::optional<FailureRecord> failure =
      with_client([&](StoreClient& c) -> std::optional<FailureRecord> {
        if (!c.check({failure_key})) return std::nullopt;
        return read_failure(c.get(failure_key), failure_key);
      });
  watching_lost = false;
  with_client([&](StoreClient& c) {
    c.set(rkey(r, "verdict"), encode_verdict(failure));
    return 0;
  });
  std::vector<std::string> acks;
  for (int m = 1; m < o.num_machines; ++m) {
    std::lock_guard lock(mu);
    if (!lost.contains(m)) acks.push_back(rkey(r, fmt::format("ack/{}", m)));
  }
  if (!acks.empty()) {
    try {
      with_client([&](StoreClient& c) {
        c.wait(acks, o.heartbeat_timeout);
        return 0;
      });
    } catch (const StoreError&) {
    }
  }
  return failure;
}

// The others: machine 0's verdict, acknowledged so that it may stop its store.
std::optional<FailureRecord> StoreBackend::Impl::follower_verdict(int r) {
  const std::string verdict_key = rkey(r, "verdict");
  if (auto lost_record = wait_key(verdict_key)) return lost_record;
  std::string verdict = with_client([&](StoreClient& c) { return c.get(verdict_key); });
  with_client([&](StoreClient& c) {
    c.set(rkey(r, fmt::format("ack/{}", o.machine_rank)), "1");
    return 0;
  });
  return decode_verdict(verdict, verdict_key);
}

}  // namespace xlaunch::cluster
