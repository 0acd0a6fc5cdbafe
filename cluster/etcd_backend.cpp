#include "cluster/etcd_backend.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "cluster/etcd_client.hpp"
#include "cluster/etcd_layout.hpp"
#include "cluster/membership.hpp"

namespace xlaunch::cluster {

using namespace etcd;

using Steady = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

double seconds(milliseconds d) { return static_cast<double>(d.count()) / 1000.0; }

std::vector<Endpoint> endpoints_or_usage_error(const std::string& text) {
  try {
    return parse_endpoints(text);
  } catch (const std::invalid_argument& e) {
    throw AgentError(e.what(), 2);
  }
}

}  // namespace

struct EtcdBackend::Impl {
  AgentOptions o;
  Client client;
  milliseconds interval;  // granularity of waits and watches
  std::int64_t lease = 0;
  int store_port = 0;  // this launcher's
  Decision decision;
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

  Impl(AgentOptions options, const std::string& endpoints)
      : o(std::move(options)),
        client(endpoints_or_usage_error(endpoints),
               std::clamp(o.heartbeat_timeout / 3, milliseconds(500), milliseconds(5000))),
        interval(std::clamp(o.heartbeat_timeout / 6, milliseconds(100), milliseconds(1000))) {}

  std::string key(std::string_view suffix) const { return job_key(o.run_id, suffix); }
  std::string rkey(int r, std::string_view suffix) const { return round_key(o.run_id, r, suffix); }
  std::string host_of(int m) {
    std::lock_guard lock(mu);  // elastic: begin_round replaces the decision
    return m >= 0 && m < static_cast<int>(decision.hosts.size()) ? decision.hosts[m] : "?";
  }

  void notify(int r, const FailureRecord& record) {
    OnStop callback;
    {
      std::lock_guard lock(mu);
      if (reported == r || !on_stop) return;
      reported = r;
      callback = on_stop;
    }
    callback(r, record);
  }

  std::optional<FailureRecord> fatal_now() {
    std::lock_guard lock(mu);
    return fatal;
  }

  void set_fatal(const FailureRecord& record) {
    {
      std::lock_guard lock(mu);
      if (!fatal) fatal = record;
    }
    wake.notify_all();
    notify(round.load(), record);
  }

  FailureRecord lost_record(int m) {
    // An elastic job re-forms without it (a restartable change of members).
    if (o.elastic()) return machine_left(m, host_of(m), o.heartbeat_timeout);
    FailureRecord r;
    r.machine_rank = m;
    r.host = host_of(m);
    r.exit_code = 1;
    r.restartable = false;
    r.cause = fmt::format("launcher lost: its etcd lease expired (--heartbeat_timeout {:g}s)",
                          seconds(o.heartbeat_timeout));
    return r;
  }

  FailureRecord etcd_lost(const std::string& why) const {
    FailureRecord r;
    r.machine_rank = rank;
    r.host = o.host;
    r.exit_code = 1;
    r.restartable = false;
    r.cause = fmt::format("etcd at {} unreachable for --heartbeat_timeout {:g}s ({})",
                          client.endpoints_text(), seconds(o.heartbeat_timeout), why);
    return r;
  }

  /// Renews the lease every TTL/3 until stopped; a lease that expired anyway, or etcd
  /// silent for heartbeat_timeout, ends this launcher's part in the job.
  void keep_loop(milliseconds ttl) {
    auto last_ok = Steady::now();
    while (!stopping) {
      {
        std::unique_lock lock(mu);
        wake.wait_for(lock, ttl / 3, [&] { return stopping.load(); });
      }
      if (stopping) return;
      try {
        if (client.keep_alive(lease) == 0) {
          FailureRecord r;  // not from `decision`: join() may be writing it
          r.machine_rank = rank;
          r.host = o.host;
          r.exit_code = 1;
          r.restartable = false;
          r.cause =
              "this launcher's etcd lease expired (was it stopped or cut off for longer "
              "than --heartbeat_timeout?)";
          set_fatal(r);
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

  std::set<std::int64_t> alive_leases(std::int64_t* revision = nullptr) {
    auto members = client.get_prefix(key("members/"));
    if (revision) *revision = members.revision;
    std::set<std::int64_t> out;
    for (const auto& kv : members.kvs)
      if (auto l = lease_of_member_key(o.run_id, kv.key)) out.insert(*l);
    return out;
  }

  /// Machine m of round r is lost and had not finished: its loss is the round's failure.
  void machine_lost(int r, int m) {
    if (!client.get(rkey(r, fmt::format("done/{}", m))).kvs.empty()) return;
    auto won = client.create(rkey(r, "failure"), cluster::encode(lost_record(m)));
    notify(r, won.created ? lost_record(m) : decode_failure(won.existing->value));
  }

  void monitor_loop() {
    std::int64_t next = 0;
    bool synced = false;
    int synced_round = -1;
    while (!stopping) {
      const int r = round.load();
      try {
        if (!synced || synced_round != r) {
          // Whatever happened before the watch (re)started: present failure, missing members
          // (and newcomers, elastic). The watch starts after the first read, so that nothing
          // in between is missed; a new round re-reads.
          auto failure = client.get(rkey(r, "failure"));
          if (!failure.kvs.empty()) notify(r, decode_failure(failure.kvs[0].value));
          const Decision d = decision_now();
          auto present = list_members();
          std::set<std::int64_t> alive;
          for (const Member& m : present) alive.insert(m.lease);
          for (std::size_t m = 0; m < d.leases.size(); ++m)
            if (!alive.contains(d.leases[m])) machine_lost(r, static_cast<int>(m));
          if (o.elastic())
            for (const Member& m : present) newcomer(r, m);
          next = failure.revision + 1;
          synced = true;
          synced_round = r;
        }
        WatchResult changes = client.watch(key(""), next, interval * 5);
        next = std::max(next, changes.next_revision);
        for (const WatchEvent& e : changes.events) {
          if (e.deleted) {
            auto l = lease_of_member_key(o.run_id, e.kv.key);
            if (!l) continue;
            const Decision d = decision_now();
            auto it = std::find(d.leases.begin(), d.leases.end(), *l);
            if (it != d.leases.end() && *l != lease)
              machine_lost(round.load(), static_cast<int>(it - d.leases.begin()));
          } else if (auto l = lease_of_member_key(o.run_id, e.kv.key); l && o.elastic()) {
            Member m{*l, e.kv.create_revision, {}, {}, 0};
            decode_member(e.kv.value, m);
            newcomer(round.load(), m);
          } else if (e.kv.key == rkey(round.load(), "failure")) {
            notify(round.load(), decode_failure(e.kv.value));
          }
        }
      } catch (const Error& e) {
        synced = false;  // the keeper decides when etcd counts as lost
        std::unique_lock lock(mu);
        wake.wait_for(lock, interval, [&] { return stopping.load(); });
      } catch (const std::invalid_argument&) {
        // A malformed failure record: not ours to act on.
      }
    }
  }

  /// Runs a step of the join: etcd lost, or a record that is not xlaunch's, ends it.
  template <class Step>
  auto joining(Step&& step) {
    try {
      return step();
    } catch (const Error& e) {
      throw AgentError(
          fmt::format("lost etcd at {} while joining: {}", client.endpoints_text(), e.what()), 1);
    } catch (const std::invalid_argument& e) {
      throw AgentError(fmt::format("malformed xlaunch record in etcd under {} ({}); is another "
                                   "program using run id '{}'?",
                                   key(""), e.what(), o.run_id),
                       1);
    }
  }

  // After a call found etcd unreachable (a timeout on a loaded machine, say): waits one
  // interval, or rethrows once etcd has been unreachable for --heartbeat_timeout.
  void wait_out_unreachable(std::optional<Steady::time_point>& failing_since) {
    if (!failing_since) failing_since = Steady::now();
    if (Steady::now() - *failing_since >= o.heartbeat_timeout) throw;
    std::unique_lock lock(mu);
    wake.wait_for(lock, interval, [&] { return stopping.load(); });
  }

  /// Waits up to `timeout` for a change under the job's keys after `revision`.
  void wait_change(std::int64_t revision, milliseconds timeout) {
    try {
      client.watch(key(""), revision + 1, std::max(timeout, milliseconds(1)));
    } catch (const Error&) {
      std::unique_lock lock(mu);
      wake.wait_for(lock, std::min(timeout, interval), [&] { return stopping.load(); });
    }
  }

  Decision decision_now() {
    std::lock_guard lock(mu);
    return decision;
  }

  /// The registered launchers, by arrival.
  std::vector<Member> list_members(std::int64_t* revision = nullptr) {
    auto listed = client.get_prefix(key("members/"));
    if (revision) *revision = listed.revision;
    std::vector<Member> out;
    for (const auto& kv : listed.kvs) {
      auto l = lease_of_member_key(o.run_id, kv.key);
      if (!l) continue;
      Member m{*l, kv.create_revision, {}, {}, 0};
      decode_member(kv.value, m);
      out.push_back(std::move(m));
    }
    std::lock_guard lock(mu);
    for (const Member& m : out) known.emplace(m.lease, m.record);
    std::stable_sort(out.begin(), out.end(), [](const Member& a, const Member& b) {
      return a.create_revision < b.create_revision;
    });
    return out;
  }

  /// The newest round's layout under round/, and its round; nullopt when none.
  std::optional<std::pair<int, Decision>> latest_layout(std::int64_t* revision) {
    auto listed = client.get_prefix(key("round/"));
    if (revision) *revision = listed.revision;
    std::vector<std::string> keys;
    for (const auto& kv : listed.kvs) keys.push_back(kv.key);
    auto r = latest_layout_round(o.run_id, keys);
    if (!r) return std::nullopt;
    for (const auto& kv : listed.kvs)
      if (kv.key == rkey(*r, "layout")) return std::pair{*r, decode_decision(kv.value)};
    return std::nullopt;
  }

  /// Adopts round r's decision; false when this launcher is not in it.
  bool adopt(int r, const Decision& d) {
    auto mine = std::find(d.leases.begin(), d.leases.end(), lease);
    {
      std::lock_guard lock(mu);
      decision = d;
    }
    if (mine == d.leases.end()) return false;
    rank = static_cast<int>(mine - d.leases.begin());
    round = r;  // after the decision: the monitor checks newcomers against this round's
    return true;
  }

  Membership membership(int r) const {
    if (const auto* problem = std::get_if<JoinProblem>(&decision.outcome))
      throw AgentError(problem->message, problem->exit_code);
    return Membership{std::get<Layout>(decision.outcome), rank, r};
  }

  /// Elastic round 0, or the running job's next round for a newcomer.
  Membership elastic_join() {
    const auto deadline = Steady::now() + o.rdzv_timeout;
    std::optional<Steady::time_point> min_since;  // when this launcher saw MIN members
    bool checked_stale = false;
    std::optional<Steady::time_point> failing_since;
    while (true) {
      try {
        if (auto f = fatal_now()) throw AgentError(fmt::format("cannot join: {}", f->cause), 1);
        std::int64_t revision = 0;
        auto latest = latest_layout(&revision);
        auto members = list_members();
        std::set<std::int64_t> alive;
        for (const Member& m : members) alive.insert(m.lease);
        if (latest && !checked_stale) {
          // Left by an earlier job with this run id whose launchers are all gone.
          const auto& leases = latest->second.leases;
          if (std::none_of(leases.begin(), leases.end(),
                           [&](std::int64_t l) { return alive.contains(l); })) {
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
          const int n = static_cast<int>(members.size());
          if (n >= o.min_machines && !min_since) min_since = Steady::now();
          const bool over = min_since && Steady::now() - *min_since >= o.last_call_timeout;
          // The first to arrive decides round 0, so that one clock times the last call.
          if (members.front().lease == lease &&
              first_round_ready(n, o.min_machines, o.max_machines, over)) {
            members.resize(std::min(n, o.max_machines));
            Decision d = elastic_decision(members, members.front().job_run_id);
            auto won = client.create(rkey(0, "layout"), encode(d));
            Decision got = won.created ? d : decode_decision(won.existing->value);
            if (adopt(0, got)) return membership(0);
            continue;
          }
        }
        // Once MIN are in, the last call (not --rdzv_timeout) bounds the wait.
        if (Steady::now() >= deadline && (latest || !min_since)) {
          if (latest) {
            throw AgentError(
                fmt::format("the elastic job with run id '{}' did not take this launcher in "
                            "within --rdzv_timeout {:g}s: it runs {} machines (--nnodes ...:{}) "
                            "or has no restart left (--max_restarts)",
                            o.run_id, seconds(o.rdzv_timeout), latest->second.leases.size(),
                            o.max_machines),
                1);
          }
          auto problem = too_few(members, o.min_machines, client.endpoints_text(), o.rdzv_timeout);
          throw AgentError(problem.message, problem.exit_code);
        }
        auto wait = std::chrono::duration_cast<milliseconds>(deadline - Steady::now());
        if (min_since) {
          wait = std::chrono::duration_cast<milliseconds>(o.last_call_timeout -
                                                          (Steady::now() - *min_since));
        }
        wait_change(revision, std::clamp(wait, milliseconds(1), interval * 10));
      } catch (const Error& e) {
        if (!e.unreachable()) throw;
        wait_out_unreachable(failing_since);
        continue;
      }
      failing_since.reset();
    }
  }

  /// Elastic round r >= 1: the first surviving member of the last round decides it (and
  /// empties its workers' store); the others wait for its layout.
  Membership elastic_round(int r, const std::function<void()>& clear_store) {
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
          if (adopt(r, decode_decision(layout.kvs[0].value))) return membership(r);
          throw AgentError(fmt::format("the elastic job re-formed without this launcher ({}, pid "
                                       "{}) in round {}",
                                       o.host, o.pid, r),
                           1);
        }
        auto members = list_members();
        std::set<std::int64_t> alive;
        for (const Member& m : members) alive.insert(m.lease);
        std::optional<std::int64_t> decider;
        for (std::int64_t l : previous.leases)
          if (alive.contains(l)) {
            decider = l;
            break;
          }
        if (decider == lease) {
          // Survivors in their order (rank 0 keeps the store), then newcomers by arrival.
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
            if (adopt(r, won.created ? d : decode_decision(won.existing->value)))
              return membership(r);
            continue;
          }
          if (Steady::now() >= deadline) {
            std::vector<JoinRecord> present;
            for (const Member& m : chosen) present.push_back(m.record);
            auto problem = too_few_machines(present, lost, o.min_machines, o.rdzv_timeout);
            throw AgentError(problem.message, problem.exit_code);
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

  /// Elastic: a launcher registered while round r runs without it; stops the round when
  /// there is room for it and a restart left.
  void newcomer(int r, const Member& m) {
    Decision d = decision_now();
    if (std::find(d.leases.begin(), d.leases.end(), m.lease) != d.leases.end()) return;
    const int n = static_cast<int>(d.leases.size());
    if (!admits_newcomer(n, 1, o.max_machines, r, o.max_restarts)) return;
    auto record = machine_joined(m.record, n);
    auto won = client.create(rkey(r, "failure"), cluster::encode(record));
    notify(r, won.created ? record : decode_failure(won.existing->value));
  }

  /// Runs `op` until it succeeds; etcd unreachable for heartbeat_timeout returns its record.
  template <typename Op>
  std::optional<FailureRecord> retrying(Op op) {
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
};

EtcdBackend::EtcdBackend(AgentOptions options, std::string endpoints, int store_port) {
  impl_ = std::make_unique<Impl>(std::move(options), endpoints);
  impl_->store_port = store_port;
}

int EtcdBackend::store_port() const {
  return impl_->decision.ports.empty() ? 0 : impl_->decision.ports[0];
}

const std::vector<std::string>& EtcdBackend::hosts() const { return impl_->decision.hosts; }

EtcdBackend::~EtcdBackend() {
  if (impl_) close(0);
}

Membership EtcdBackend::join() {
  Impl& s = *impl_;
  const auto ttl = std::max(milliseconds(2000), s.o.heartbeat_timeout);
  // etcd must answer at start within heartbeat_timeout: a wrong endpoint fails fast.
  const auto reach_deadline = Steady::now() + s.o.heartbeat_timeout;
  while (true) {
    try {
      s.lease = s.client
                    .grant_lease(std::chrono::duration_cast<std::chrono::seconds>(ttl).count() +
                                 (ttl.count() % 1000 != 0))
                    .id;
      break;
    } catch (const Error& e) {
      if (!e.unreachable() || Steady::now() >= reach_deadline) {
        throw AgentError(fmt::format("cannot join through etcd: {}; check that etcd runs at {} "
                                     "(--rdzv_endpoint, or --main_process_ip/--main_process_port) "
                                     "and that this machine can reach it",
                                     e.what(), s.client.endpoints_text()),
                         1);
      }
      std::this_thread::sleep_for(s.interval);
    }
  }
  s.keeper = std::thread([&s, ttl] { s.keep_loop(ttl); });

  if (s.o.elastic()) {
    return s.joining([&s] {
      JoinRecord me{-1, s.o.host, s.o.pid, s.o.local_processes, s.o.version, s.o.settings};
      s.client.put(member_key(s.o.run_id, s.lease), encode_member(me, s.o.job_run_id, s.store_port),
                   s.lease);
      return s.elastic_join();
    });
  }
  const auto deadline = Steady::now() + s.o.rdzv_timeout;
  s.decision = s.joining([&s, deadline] {
    // A layout left by an earlier job with this run id whose launchers are all gone.
    auto old = s.client.get(s.key("layout"));
    if (!old.kvs.empty()) {
      Decision previous = decode_decision(old.kvs[0].value);
      auto alive = s.alive_leases();
      bool running = std::any_of(previous.leases.begin(), previous.leases.end(),
                                 [&](std::int64_t l) { return alive.contains(l); });
      if (running) {
        throw AgentError(fmt::format("a job with run id '{}' is already running through etcd at "
                                     "{} (rank 0 on {}); give this job its own --rdzv_id",
                                     s.o.run_id, s.client.endpoints_text(),
                                     previous.hosts.empty() ? "?" : previous.hosts[0]),
                         2);
      }
      s.client.erase_prefix(s.key("round/"));
      s.client.erase_prefix(s.key("layout"));
    }
    JoinRecord me{s.o.machine_rank,    s.o.host,    s.o.pid,
                  s.o.local_processes, s.o.version, s.o.settings};
    s.client.put(member_key(s.o.run_id, s.lease), encode_member(me, s.o.job_run_id, s.store_port),
                 s.lease);

    std::optional<Decision> decided;
    std::vector<Member> members;
    while (!decided) {
      if (auto f = s.fatal_now()) throw AgentError(fmt::format("cannot join: {}", f->cause), 1);
      auto layout = s.client.get(s.key("layout"));
      if (!layout.kvs.empty()) {
        decided = decode_decision(layout.kvs[0].value);
        break;
      }
      auto listed = s.client.get_prefix(s.key("members/"));
      members.clear();
      for (const auto& kv : listed.kvs) {
        auto l = lease_of_member_key(s.o.run_id, kv.key);
        if (!l) continue;
        Member m{*l, kv.create_revision, {}, {}, 0};
        decode_member(kv.value, m);
        members.push_back(std::move(m));
      }
      if (auto d = decide(members, s.o.num_machines, s.o.total_processes)) {
        auto won = s.client.create(s.key("layout"), encode(*d));
        decided = won.created ? *d : decode_decision(won.existing->value);
        break;
      }
      if (Steady::now() >= deadline) {
        auto problem =
            too_few(members, s.o.num_machines, s.client.endpoints_text(), s.o.rdzv_timeout);
        throw AgentError(problem.message, problem.exit_code);
      }
      // From the first read on: a layout made between the two reads is not missed.
      s.wait_change(layout.revision,
                    std::min(std::chrono::duration_cast<milliseconds>(deadline - Steady::now()),
                             s.interval * 10));
    }
    return *decided;
  });
  if (const auto* problem = std::get_if<JoinProblem>(&s.decision.outcome))
    throw AgentError(problem->message, problem->exit_code);
  auto mine = std::find(s.decision.leases.begin(), s.decision.leases.end(), s.lease);
  if (mine == s.decision.leases.end()) {
    throw AgentError(
        fmt::format("the job with run id '{}' formed without this launcher ({}, pid {}): its {} "
                    "machines had joined first; start exactly --num_machines launchers, or give "
                    "this one its own --rdzv_id",
                    s.o.run_id, s.o.host, s.o.pid, s.o.num_machines),
        2);
  }
  s.rank = static_cast<int>(mine - s.decision.leases.begin());
  return Membership{std::get<Layout>(s.decision.outcome), s.rank, 0};
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

void EtcdBackend::close(int /*exit_code*/) {
  Impl& s = *impl_;
  stop_monitor();
  if (s.lease != 0) {
    try {
      s.client.revoke(s.lease);
    } catch (const std::exception&) {
      // etcd is gone: the lease expires on its own.
    }
    s.lease = 0;
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

FailureRecord EtcdBackend::report_failure(int round, const FailureRecord& record) {
  Impl& s = *impl_;
  try {
    auto won = s.client.create(s.rkey(round, "failure"), cluster::encode(record));
    return won.created ? record : decode_failure(won.existing->value);
  } catch (const std::exception&) {
    return record;  // etcd is gone: the keeper reports it
  }
}

std::optional<FailureRecord> EtcdBackend::finish_round(int round,
                                                       std::optional<FailureRecord> local) {
  Impl& s = *impl_;
  if (local) report_failure(round, *local);
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
            failure = cluster::encode(report_failure(round, s.lost_record(m)));
          }
        }
        if (!all) return;
        auto won = s.client.create(s.rkey(round, "verdict"), failure ? *failure : "ok");
        verdict = won.created ? (failure ? *failure : "ok") : won.existing->value;
      });
      if (f) return f;
      if (verdict) {
        if (*verdict == "ok") return std::nullopt;
        return decode_failure(*verdict);
      }
      s.wait_change(revision, s.interval * 5);
    }
  } catch (const std::invalid_argument&) {
    return local;
  } catch (const Error& e) {
    return s.etcd_lost(e.what());
  }
}

}  // namespace xlaunch::cluster
