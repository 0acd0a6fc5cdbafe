// The etcd backend's threads: the keeper renews this launcher's lease, and the monitor
// watches the job's keys for what stops a round: a failure published anywhere, a launcher
// whose lease is gone, or (elastic jobs) a newcomer worth re-forming for.
#include <fmt/format.h>

#include <algorithm>

#include "cluster/blame.hpp"
#include "cluster/etcd_backend_impl.hpp"

namespace xlaunch::cluster {

using namespace etcd;

using std::chrono::milliseconds;
using Steady = std::chrono::steady_clock;

/// Renews the lease every TTL/3 until stopped; a lease that expired anyway, or etcd
/// silent for heartbeat_timeout, ends this launcher's part in the job.
void EtcdBackend::Impl::keep_loop(milliseconds ttl) {
  auto last_ok = Steady::now();
  while (!stopping) {
    {
      std::unique_lock lock(mu);
      wake.wait_for(lock, ttl / 3, [&] { return stopping.load(); });
    }
    if (stopping) return;
    try {
      if (client.keep_alive(lease) == 0) {
        set_fatal(own_lease_expired(rank, o.host));  // not from `decision`: join() may write it
        return;
      }
      last_ok = Steady::now();
    } catch (const Error& e) {
      if (Steady::now() - last_ok >= o.heartbeat_timeout) {
        set_fatal(etcd_lost(e.what()));
        return;
      }
    }
  }
}

/// Machine m of round r is lost and had not finished: its loss is the round's failure.
void EtcdBackend::Impl::machine_lost(int r, int m) {
  if (!client.get(rkey(r, fmt::format("done/{}", m))).kvs.empty()) return;
  auto won = client.create(rkey(r, "failure"), cluster::encode(lost_record(m)));
  notify(r, won.created ? lost_record(m) : failure_at(won.existing->value, rkey(r, "failure")));
}

void EtcdBackend::Impl::monitor_loop() {
  std::int64_t next = 0;
  bool synced = false;
  int synced_round = -1;
  while (!stopping) {
    const int r = round.load();
    try {
      if (!synced || synced_round != r) {
        next = resync(r);
        synced = true;
        synced_round = r;
      }
      WatchResult changes = client.watch(key(""), next, interval * 5);
      next = std::max(next, changes.next_revision);
      for (const WatchEvent& e : changes.events) on_event(e);
    } catch (const Error& e) {
      synced = false;  // the keeper decides when etcd counts as lost
      std::unique_lock lock(mu);
      wake.wait_for(lock, interval, [&] { return stopping.load(); });
    } catch (const MalformedRecord& e) {
      // Every launcher reads the same record: they all stop with the same words.
      notify(round.load(), malformed_failure(e, o.run_id));
    }
  }
}

// Whatever happened before the watch (re)started: present failure, missing members (and
// newcomers, elastic). The watch starts after the first read, so that nothing in between is
// missed; a new round re-reads. Returns the revision the watch starts from.
std::int64_t EtcdBackend::Impl::resync(int r) {
  auto failure = client.get(rkey(r, "failure"));
  if (!failure.kvs.empty()) notify(r, failure_at(failure.kvs[0].value, rkey(r, "failure")));
  const Decision d = decision_now();
  auto present = list_members();
  std::set<std::int64_t> alive;
  for (const Member& m : present) alive.insert(m.lease);
  for (std::size_t m = 0; m < d.leases.size(); ++m)
    if (!alive.contains(d.leases[m])) machine_lost(r, static_cast<int>(m));
  if (o.elastic())
    for (const Member& m : present) newcomer(r, m);
  return failure.revision + 1;
}

void EtcdBackend::Impl::on_event(const WatchEvent& e) {
  if (e.deleted) {
    auto l = lease_of_member_key(o.run_id, e.kv.key);
    if (!l) return;
    auto m = rank_of(decision_now(), *l);
    if (m && *l != lease) machine_lost(round.load(), *m);
  } else if (auto l = lease_of_member_key(o.run_id, e.kv.key); l && o.elastic()) {
    Member m{*l, e.kv.create_revision, {}, {}, 0};
    decode_member(e.kv.value, e.kv.key, m);
    newcomer(round.load(), m);
  } else if (e.kv.key == rkey(round.load(), "failure")) {
    notify(round.load(), failure_at(e.kv.value, e.kv.key));
  }
}

/// Elastic: a launcher registered while round r runs without it; stops the round when
/// there is room for it and a restart left.
void EtcdBackend::Impl::newcomer(int r, const Member& m) {
  Decision d = decision_now();
  if (rank_of(d, m.lease)) return;
  const int n = static_cast<int>(d.leases.size());
  if (!admits_newcomer(n, 1, o.max_machines, r, o.max_restarts)) return;
  auto record = machine_joined(m.record, n);
  auto won = client.create(rkey(r, "failure"), cluster::encode(record));
  notify(r, won.created ? record : failure_at(won.existing->value, rkey(r, "failure")));
}

void EtcdBackend::start_monitor(OnStop on_stop) {
  Impl& s = *impl_;
  {
    std::lock_guard lock(s.mu);
    s.on_stop = std::move(on_stop);
  }
  if (auto f = s.fatal_now()) s.notify(s.round.load(), *f);  // before the monitor existed
  s.monitor = std::thread([&s] { s.monitor_loop(); });
}

void EtcdBackend::stop_monitor() {
  Impl& s = *impl_;
  s.stopping = true;
  s.wake.notify_all();
  if (s.monitor.joinable()) s.monitor.join();
  if (s.keeper.joinable()) s.keeper.join();
}

}  // namespace xlaunch::cluster
