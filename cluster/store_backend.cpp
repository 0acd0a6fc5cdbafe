#include "cluster/store_backend.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "cluster/membership.hpp"
#include "config/text.hpp"
#include "launcher/console.hpp"
#include "rendezvous/store_client.hpp"

namespace xlaunch::cluster {

using config::parse_int;
using launcher::say;

using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;
using rendezvous::StoreClient;
using rendezvous::StoreError;
using rendezvous::StoreTimeout;

namespace {

double seconds(std::chrono::milliseconds d) { return static_cast<double>(d.count()) / 1000.0; }

}  // namespace

struct StoreBackend::Impl {
  AgentOptions o;
  std::chrono::milliseconds interval;  // heartbeat period and the granularity of waits
  std::optional<StoreClient> client;   // main thread only
  std::vector<std::string> hosts;      // per machine rank, after join

  std::thread monitor;
  std::atomic<bool> stopping{false};
  std::atomic<int> round{0};
  std::atomic<bool> watching_lost{true};
  std::mutex mu;
  std::condition_variable wake;
  std::set<int> lost;                       // guarded by mu
  std::optional<FailureRecord> store_lost;  // guarded by mu (machines > 0)
  std::optional<Steady::time_point> last_beat_ok;
  OnStop on_failure;

  // The layout this launcher runs (fixed jobs: the join's; elastic: the round's).
  Layout layout;
  int slot = 0;   // this launcher's arrival slot
  JoinRecord me;  // what it registered
  // Elastic jobs, the host's view (guarded by arr_mu): every record read, the members of the
  // running round (slots, rank order), launchers waiting to be taken in.
  std::mutex arr_mu;
  std::map<int, JoinRecord> records;
  int known = 0;
  std::vector<int> members;
  std::vector<int> waiting;

  explicit Impl(AgentOptions options) : o(std::move(options)) {
    interval = std::clamp(o.heartbeat_timeout / 6, std::chrono::milliseconds(50),
                          std::chrono::milliseconds(1000));
  }

  std::string key(std::string_view suffix) const {
    return fmt::format("xlaunch/{}/{}", o.run_id, suffix);
  }
  std::string rkey(int r, std::string_view suffix) const {
    return key(fmt::format("round/{}/{}", r, suffix));
  }

  StoreClient connect(std::chrono::milliseconds timeout) const {
    rendezvous::ClientOptions options;
    options.host = o.store_host;
    options.port = o.store_port;
    options.connect_timeout = timeout;
    options.timeout = timeout;
    return StoreClient::connect(options);
  }

  std::string host_of(int m) const {
    return m >= 0 && m < static_cast<int>(hosts.size()) ? hosts[m] : "?";
  }

  bool elastic() const { return o.elastic(); }

  // Heartbeat key of machine rank m: per arrival slot in elastic jobs, whose ranks change.
  std::string hb_key(int m) {
    if (!elastic()) return key(fmt::format("hb/{}", m));
    std::lock_guard lock(mu);
    return key(
        fmt::format("hb/s{}", m < static_cast<int>(layout.slots.size()) ? layout.slots[m] : -1));
  }
  std::string my_hb_key() const {
    return elastic() ? key(fmt::format("hb/s{}", slot)) : key(fmt::format("hb/{}", o.machine_rank));
  }

  // --- elastic jobs ---------------------------------------------------------------------

  // The host reads arrival records it has not seen; a newcomer that disagrees with the host
  // (settings, version) is refused at once instead of failing the running job later.
  void poll_arrivals(StoreClient& c) {
    std::lock_guard lock(arr_mu);
    const auto n = c.add(key("arrivals"), 0);
    for (int k = known + 1; k <= n; ++k) {
      const std::string k_key = key(fmt::format("arrival/{}", k));
      if (!c.check({k_key})) break;  // counted, record not written yet
      JoinRecord r = decode_join(c.get(k_key));
      records[k] = r;
      known = k;
      if (k == slot) continue;
      auto check = elastic_layout({me, r}, {slot, k}, "");
      if (auto* problem = std::get_if<JoinProblem>(&check)) {
        c.set(key(fmt::format("refused/{}", k)), problem->message);
      } else {
        waiting.push_back(k);
      }
    }
  }

  // The host publishes round r's members (or why there is no round) and adopts them.
  Membership publish_round(StoreClient& c, int r, const std::vector<int>& next) {
    std::vector<JoinRecord> recs;
    {
      std::lock_guard lock(arr_mu);
      for (int k : next) recs.push_back(records.at(k));
      std::erase_if(waiting,
                    [&](int k) { return std::find(next.begin(), next.end(), k) != next.end(); });
    }
    auto decision = elastic_layout(recs, next, o.job_run_id);
    c.set(rkey(r, "layout"), encode_layout(decision));
    c.set(key("latest"), std::to_string(r));
    if (const auto* problem = std::get_if<JoinProblem>(&decision)) {
      throw AgentError(problem->message, problem->exit_code);
    }
    adopt(std::get<Layout>(decision), 0, recs);
    return Membership{layout, 0, r};
  }

  void adopt(const Layout& l, int rank, const std::vector<JoinRecord>& recs) {
    std::lock_guard lock(mu);
    layout = l;
    o.machine_rank = rank;
    o.num_machines = static_cast<int>(l.local_processes.size());
    hosts.clear();
    for (const JoinRecord& r : recs) hosts.push_back(r.host);
    lost.clear();
  }

  // A non-host's place in round r's layout; nullopt when it is not in it.
  std::optional<Membership> find_me(StoreClient& c, const Layout& l) {
    auto it = std::find(l.slots.begin(), l.slots.end(), slot);
    if (it == l.slots.end()) return std::nullopt;
    std::vector<JoinRecord> recs;
    for (int k : l.slots) recs.push_back(decode_join(c.get(key(fmt::format("arrival/{}", k)))));
    const int rank = static_cast<int>(it - l.slots.begin());
    adopt(l, rank, recs);
    return Membership{layout, rank};
  }

  Membership elastic_host_first_round(StoreClient& c) {
    const auto deadline = Steady::now() + o.rdzv_timeout;
    std::optional<Steady::time_point> min_reached;
    bool told = false;
    for (;;) {
      poll_arrivals(c);
      int arrived = 0;
      {
        std::lock_guard lock(arr_mu);
        arrived = 1 + static_cast<int>(waiting.size());
      }
      if (arrived >= o.min_machines && !min_reached) min_reached = Steady::now();
      const bool last_call_over =
          min_reached && Steady::now() - *min_reached >= o.last_call_timeout;
      if (first_round_ready(arrived, o.min_machines, o.max_machines, last_call_over)) break;
      if (min_reached && !told) {
        told = true;
        say("xlaunch: {} of {}..{} machines joined; waiting up to {:g}s (last call) for more\n",
            arrived, o.min_machines, o.max_machines, seconds(o.last_call_timeout));
      }
      if (!min_reached && Steady::now() >= deadline) {  // MIN in: the last call ends it
        std::vector<JoinRecord> in;
        {
          std::lock_guard lock(arr_mu);
          in.push_back(me);
          for (int k : waiting) in.push_back(records.at(k));
        }
        std::vector<std::string> names;
        for (const JoinRecord& r : in) names.push_back(fmt::format("{} (pid {})", r.host, r.pid));
        JoinProblem p{1, fmt::format("only {} of the minimum {} machines joined within "
                                     "--rdzv_timeout {:g}s (joined: {}); start more launchers "
                                     "with the same --main_process_ip/port, or lower MIN",
                                     in.size(), o.min_machines, seconds(o.rdzv_timeout),
                                     fmt::join(names, ", "))};
        c.set(rkey(0, "layout"), encode_layout(p));
        c.set(key("latest"), "0");
        ack_wait(c);
        throw AgentError(p.message, p.exit_code);
      }
      try {
        c.wait({key(fmt::format("arrival/{}", known_now() + 1))}, interval);
      } catch (const StoreTimeout&) {
      }
    }
    std::vector<int> next;
    {
      std::lock_guard lock(arr_mu);
      next = next_members({slot}, {}, waiting, o.max_machines);
    }
    return publish_round(c, 0, next);
  }

  int known_now() {
    std::lock_guard lock(arr_mu);
    return known;
  }

  // Before the host exits on a problem, the waiting launchers get to read why.
  void ack_wait(StoreClient& c) {
    std::vector<std::string> acks;
    {
      std::lock_guard lock(arr_mu);
      for (int k : waiting) acks.push_back(key(fmt::format("layout_ack/{}", k)));
    }
    try {
      if (!acks.empty()) c.wait(acks, o.heartbeat_timeout);
    } catch (const StoreError&) {
    }
  }

  // A non-host waits to be taken into a round: the first one formed with it in.
  Membership elastic_wait_for_round(StoreClient& c, int from_round) {
    // The host may wait --rdzv_timeout for MIN, then the last call: allow for both.
    const auto deadline =
        Steady::now() + o.rdzv_timeout + o.last_call_timeout + o.heartbeat_timeout;
    int target = from_round;
    for (;;) {
      c.add(my_hb_key(), 1);  // alive while waiting
      const std::string refused = key(fmt::format("refused/{}", slot));
      if (c.check({refused})) {
        throw AgentError(fmt::format("the job refused this machine: {}", c.get(refused)), 2);
      }
      if (c.check({key("closed")})) {
        throw AgentError(fmt::format("the job ended (exit code {}) before this machine was "
                                     "taken in",
                                     c.get(key("closed"))),
                         1);
      }
      if (c.check({key("latest")})) {
        int latest = 0;
        if (parse_int(c.get(key("latest")), latest)) target = std::max(target, latest);
      }
      if (c.check({rkey(target, "layout")})) {
        auto decision = decode_layout(c.get(rkey(target, "layout")));
        if (const auto* problem = std::get_if<JoinProblem>(&decision)) {
          c.set(key(fmt::format("layout_ack/{}", slot)), "1");
          throw AgentError(problem->message, problem->exit_code);
        }
        if (auto m = find_me(c, std::get<Layout>(decision))) {
          round = target;
          m->round = target;
          return *m;
        }
        ++target;
        continue;
      }
      if (Steady::now() >= deadline) {
        throw AgentError(fmt::format("machine (slot {}) was not taken into the job within "
                                     "--rdzv_timeout {:g}s: it runs with its maximum of "
                                     "machines, or has no restarts left to re-form with",
                                     slot, seconds(o.rdzv_timeout)),
                         1);
      }
      try {
        c.wait({rkey(target, "layout")}, interval);
      } catch (const StoreTimeout&) {
      }
    }
  }

  FailureRecord machine0_lost(const std::string& why) const {
    FailureRecord r;
    r.machine_rank = 0;
    r.host = host_of(0);
    r.exit_code = 1;
    r.restartable = false;
    // The same words on every machine: `why` (timings, attempts) differs between them.
    say("xlaunch: machine 0's store: {}\n", why);
    r.cause =
        fmt::format("launcher lost: its store at {}:{} is unreachable (--heartbeat_timeout {:g}s)",
                    o.store_host, o.store_port, seconds(o.heartbeat_timeout));
    return r;
  }

  std::optional<FailureRecord> lost_store() {
    std::lock_guard lock(mu);
    return store_lost;
  }

  // Runs `op` on the main client, reconnecting once after a broken connection (machine 0
  // empties the store between rounds, which closes parked waits).
  template <typename Op>
  auto with_client(Op op) {
    try {
      if (!client) client = connect(o.heartbeat_timeout);
      return op(*client);
    } catch (const StoreTimeout&) {
      throw;
    } catch (const StoreError&) {
      client.reset();
      client = connect(o.heartbeat_timeout);
      return op(*client);
    }
  }

  // Blocks until `k` exists or `give_up` returns a record; nullopt means the key is there.
  std::optional<FailureRecord> wait_key(const std::string& k) {
    for (;;) {
      if (auto lost_record = lost_store()) return lost_record;
      try {
        with_client([&](StoreClient& c) {
          c.wait({k}, interval);
          return 0;
        });
        return std::nullopt;
      } catch (const StoreTimeout&) {
      } catch (const StoreError&) {
        // The monitor decides when machine 0 counts as lost; retry until it does.
        std::unique_lock lock(mu);
        wake.wait_for(lock, interval);
      }
    }
  }

  // Round r >= 1 of an elastic job, on the host: the members not lost and the newcomers,
  // up to MAX; below MIN it waits up to --rdzv_timeout for launchers to arrive. The caller's
  // clear_store empties the workers' keys (the launchers' records stay) before publishing.
  Membership elastic_host_next_round(int r, const std::function<void()>& clear_store) {
    if (!client) client = connect(o.heartbeat_timeout);
    StoreClient& c = *client;
    std::set<int> lost_slots;
    std::vector<JoinRecord> lost_records;
    std::vector<int> current;
    {
      std::lock_guard lock(mu);
      current = layout.slots;
      for (int m : lost) lost_slots.insert(layout.slots.at(m));
    }
    {
      std::lock_guard lock(arr_mu);
      for (int k : lost_slots) lost_records.push_back(records.at(k));
    }
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
        std::vector<JoinRecord> present;
        {
          std::lock_guard lock(arr_mu);
          for (int k : next) present.push_back(records.at(k));
        }
        JoinProblem p = too_few_machines(present, lost_records, o.min_machines, o.rdzv_timeout);
        c.set(rkey(r, "layout"), encode_layout(p));
        c.set(key("latest"), std::to_string(r));
        ack_wait(c);
        throw AgentError(p.message, p.exit_code);
      }
      try {
        c.wait({key(fmt::format("arrival/{}", known_now() + 1))}, interval);
      } catch (const StoreTimeout&) {
      }
    }
  }

  // Round r >= 1 of an elastic job, on the others: wait for the host's layout.
  Membership elastic_next_round(int r) {
    round = r;
    if (auto lost_record = wait_key(rkey(r, "layout"))) {
      throw AgentError(fmt::format("job failed: {}", lost_record->describe()),
                       lost_record->exit_code);
    }
    return with_client([&](StoreClient& c) {
      auto decision = decode_layout(c.get(rkey(r, "layout")));
      if (const auto* problem = std::get_if<JoinProblem>(&decision)) {
        c.set(key(fmt::format("layout_ack/{}", slot)), "1");
        throw AgentError(problem->message, problem->exit_code);
      }
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

  void monitor_loop() {
    std::optional<StoreClient> c;
    int reported = -1;
    Steady::time_point last_ok = Steady::now();
    std::map<std::string, std::pair<std::int64_t, Steady::time_point>> seen;
    bool is_host = o.machine_rank == 0;
    auto notify = [&](int r, const FailureRecord& rec) {
      if (reported == r) return;
      reported = r;
      if (on_failure) on_failure(r, rec);
    };
    while (!stopping) {
      const int r = round.load();
      try {
        if (!c)
          c = connect(std::max(
              o.heartbeat_timeout -
                  std::chrono::duration_cast<std::chrono::milliseconds>(Steady::now() - last_ok),
              std::chrono::milliseconds(1)));
        c->add(my_hb_key(), 1);
        last_ok = Steady::now();
        int machines = 0;
        {
          std::lock_guard lock(mu);
          machines = o.num_machines;
          is_host = o.machine_rank == 0;
        }
        if (is_host && watching_lost) {
          for (int m = 1; m < machines; ++m) {
            {
              std::lock_guard lock(mu);
              if (lost.contains(m)) continue;
            }
            const std::string hb = hb_key(m);
            std::int64_t beats = c->add(hb, 0);
            auto [at, fresh] = seen.try_emplace(hb, -1, Steady::now());
            auto& [value, when] = at->second;
            if (beats != value) {
              value = beats;
              when = Steady::now();
            } else if (Steady::now() - when > o.heartbeat_timeout) {
              FailureRecord rec;
              rec.machine_rank = m;
              rec.host = host_of(m);
              rec.exit_code = 1;
              rec.restartable = false;
              rec.cause = fmt::format("launcher lost: no heartbeat for {:g}s (--heartbeat_timeout)",
                                      seconds(o.heartbeat_timeout));
              // An elastic job re-forms without it (when a restart is left).
              if (elastic()) rec = machine_left(m, host_of(m), o.heartbeat_timeout);
              {
                std::lock_guard lock(mu);
                lost.insert(m);
              }
              std::string won = c->compare_set(rkey(r, "failure"), "", encode(rec));
              notify(r, decode_failure(won));
            }
          }
        }
        if (is_host && elastic() && watching_lost && reported != r) {
          poll_arrivals(*c);
          std::optional<JoinRecord> newcomer;
          {
            std::lock_guard lock(arr_mu);
            if (admits_newcomer(machines, static_cast<int>(waiting.size()), o.max_machines, r,
                                o.max_restarts)) {
              newcomer = records.at(waiting.front());
            }
          }
          if (newcomer) {
            std::string won =
                c->compare_set(rkey(r, "failure"), "", encode(machine_joined(*newcomer, machines)));
            notify(r, decode_failure(won));
          }
        }
        if (reported != r) {
          try {
            c->wait({rkey(r, "failure")}, interval);
            notify(r, decode_failure(c->get(rkey(r, "failure"))));
          } catch (const StoreTimeout&) {
          }
        } else {
          std::unique_lock lock(mu);
          wake.wait_for(lock, interval, [&] { return stopping.load(); });
        }
      } catch (const StoreTimeout&) {
      } catch (const std::invalid_argument&) {
      } catch (const StoreError& e) {
        c.reset();
        if (!is_host && Steady::now() - last_ok >= o.heartbeat_timeout) {
          FailureRecord rec = machine0_lost(e.what());
          {
            std::lock_guard lock(mu);
            store_lost = rec;
          }
          wake.notify_all();
          notify(r, rec);
          return;
        }
        std::unique_lock lock(mu);
        wake.wait_for(lock, interval / 2, [&] { return stopping.load(); });
      }
    }
  }
};

StoreBackend::StoreBackend(AgentOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

StoreBackend::~StoreBackend() { stop_monitor(); }

std::string StoreBackend::key(std::string_view suffix) const { return impl_->key(suffix); }

Membership StoreBackend::join() {
  Impl& s = *impl_;
  const auto deadline = Steady::now() + s.o.rdzv_timeout;
  auto remaining = [&] {
    return std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Steady::now()),
                    std::chrono::milliseconds(1));
  };
  int slot = 0;
  try {
    s.client = s.connect(s.o.rdzv_timeout);
    s.me = JoinRecord{s.o.machine_rank,    s.o.host,    s.o.pid,
                      s.o.local_processes, s.o.version, s.o.settings};
    slot = static_cast<int>(s.client->add(s.key("arrivals"), 1));
    s.slot = slot;
    s.client->set(s.key(fmt::format("arrival/{}", slot)), encode(s.me));
  } catch (const StoreError& e) {
    throw AgentError(
        fmt::format("{}: cannot reach machine 0's store at {}:{} within --rdzv_timeout "
                    "{:g}s: {}; check that machine 0's launcher runs, --main_process_ip/port, "
                    "and the firewall",
                    s.o.machine_rank >= 0 ? fmt::format("machine {}", s.o.machine_rank)
                                          : std::string("this machine"),
                    s.o.store_host, s.o.store_port, seconds(s.o.rdzv_timeout), e.what()),
        1);
  }
  if (s.elastic()) {
    try {
      return s.o.machine_rank == 0 ? s.elastic_host_first_round(*s.client)
                                   : s.elastic_wait_for_round(*s.client, 0);
    } catch (const StoreError& e) {
      throw AgentError(fmt::format("lost machine 0's store at {}:{} while joining: {}",
                                   s.o.store_host, s.o.store_port, e.what()),
                       1);
    } catch (const std::invalid_argument& e) {
      throw AgentError(fmt::format("malformed join record in the store ({}); is another "
                                   "program using run id {}?",
                                   e.what(), s.o.run_id),
                       1);
    }
  }

  std::variant<Layout, JoinProblem> decision;
  std::vector<JoinRecord> arrivals;
  try {
    if (s.o.machine_rank == 0) {
      bool complete = true;
      for (int k = 1; k <= s.o.num_machines; ++k) {
        const std::string k_key = s.key(fmt::format("arrival/{}", k));
        try {
          s.client->wait({k_key}, remaining());
        } catch (const StoreTimeout&) {
          complete = false;
          break;
        }
        arrivals.push_back(decode_join(s.client->get(k_key)));
      }
      decision = complete ? decide_layout(arrivals, s.o.num_machines, s.o.total_processes)
                          : std::variant<Layout, JoinProblem>(
                                missing_machines(arrivals, s.o.num_machines, s.o.rdzv_timeout));
      // One job, one run id: machine 0's (the others' random ones are dropped).
      if (auto* layout = std::get_if<Layout>(&decision)) layout->run_id = s.o.job_run_id;
      s.client->set(s.key("layout"), encode_layout(decision));
      if (std::holds_alternative<JoinProblem>(decision)) {
        // This launcher exits now, and its store with it: let the others read why first.
        std::vector<std::string> acks;
        const auto arrived = s.client->add(s.key("arrivals"), 0);
        for (int k = 1; k <= arrived; ++k)
          if (k != slot) acks.push_back(s.key(fmt::format("layout_ack/{}", k)));
        try {
          if (!acks.empty()) s.client->wait(acks, s.o.heartbeat_timeout);
        } catch (const StoreTimeout&) {
        }
      }
    } else {
      // Machine 0 answers at its own deadline; allow for the launchers' different start times.
      decision = decode_layout(s.client->get(s.key("layout"), remaining() + s.o.heartbeat_timeout));
      if (std::holds_alternative<Layout>(decision)) {
        for (int k = 1; k <= s.o.num_machines; ++k) {
          arrivals.push_back(decode_join(s.client->get(s.key(fmt::format("arrival/{}", k)))));
        }
      }
      s.client->set(s.key(fmt::format("layout_ack/{}", slot)), "1");
    }
  } catch (const StoreTimeout&) {
    throw AgentError(fmt::format("machine {}: machine 0 did not announce the job within "
                                 "--rdzv_timeout {:g}s",
                                 s.o.machine_rank, seconds(s.o.rdzv_timeout)),
                     1);
  } catch (const StoreError& e) {
    throw AgentError(fmt::format("machine {}: lost machine 0's store at {}:{} while joining: {}",
                                 s.o.machine_rank, s.o.store_host, s.o.store_port, e.what()),
                     1);
  } catch (const std::invalid_argument& e) {
    throw AgentError(fmt::format("machine {}: malformed join record in the store ({}); is "
                                 "another program using run id {}?",
                                 s.o.machine_rank, e.what(), s.o.run_id),
                     1);
  }
  if (const auto* problem = std::get_if<JoinProblem>(&decision)) {
    throw AgentError(problem->message, problem->exit_code);
  }
  Layout layout = std::get<Layout>(decision);
  s.layout = layout;
  s.hosts.assign(s.o.num_machines, "?");
  for (const JoinRecord& r : arrivals) s.hosts[r.machine_rank] = r.host;
  if (slot > s.o.num_machines) {
    // The job formed without this launcher: its rank was taken by an earlier one.
    FailureRecord rec;
    rec.machine_rank = s.o.machine_rank;
    rec.host = s.o.host;
    rec.exit_code = 2;
    rec.restartable = false;
    rec.cause = fmt::format(
        "a second launcher (pid {}) also claims machine rank {} (already taken by {}); give "
        "each machine its own --machine_rank",
        s.o.pid, s.o.machine_rank, s.host_of(s.o.machine_rank));
    FailureRecord won = report_failure(0, rec);
    throw AgentError(fmt::format("job failed: {}", won.describe()), 2);
  }
  return Membership{layout, s.o.machine_rank};
}

void StoreBackend::start_monitor(OnStop on_failure) {
  Impl& s = *impl_;
  s.on_failure = std::move(on_failure);
  s.monitor = std::thread([&s] { s.monitor_loop(); });
}

void StoreBackend::stop_monitor() {
  Impl& s = *impl_;
  s.stopping = true;
  s.wake.notify_all();
  if (s.monitor.joinable()) s.monitor.join();
}

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
    } catch (const std::invalid_argument& e) {
      throw AgentError(fmt::format("malformed round record in the store ({})", e.what()), 1);
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

void StoreBackend::close(int exit_code) {
  Impl& s = *impl_;
  if (!s.elastic() || s.o.machine_rank != 0) return;
  try {
    s.with_client([&](StoreClient& c) {
      c.set(s.key("closed"), std::to_string(exit_code));
      return 0;
    });
    // Launchers still waiting to be taken in poll every interval: let them read it.
    bool anyone_waiting = false;
    {
      std::lock_guard lock(s.arr_mu);
      anyone_waiting = !s.waiting.empty();
    }
    if (anyone_waiting) std::this_thread::sleep_for(3 * s.interval);
  } catch (const std::exception&) {
  }
}

FailureRecord StoreBackend::report_failure(int round, const FailureRecord& record) {
  Impl& s = *impl_;
  try {
    std::string won = s.with_client([&](StoreClient& c) {
      return c.compare_set(s.rkey(round, "failure"), "", encode(record));
    });
    return decode_failure(won);
  } catch (const std::exception&) {
    return record;  // the store is gone; the monitor reports machine 0 as lost
  }
}

std::optional<FailureRecord> StoreBackend::finish_round(int round,
                                                        std::optional<FailureRecord> local) {
  Impl& s = *impl_;
  if (local) report_failure(round, *local);
  auto failure_now = [&]() -> std::optional<FailureRecord> {
    return s.with_client([&](StoreClient& c) -> std::optional<FailureRecord> {
      if (!c.check({s.rkey(round, "failure")})) return std::nullopt;
      return decode_failure(c.get(s.rkey(round, "failure")));
    });
  };
  try {
    s.with_client([&](StoreClient& c) {
      c.set(s.rkey(round, fmt::format("done/{}", s.o.machine_rank)), "1");
      return 0;
    });
    if (s.o.machine_rank == 0) {
      for (int m = 1; m < s.o.num_machines; ++m) {
        const std::string done = s.rkey(round, fmt::format("done/{}", m));
        for (;;) {
          {
            std::lock_guard lock(s.mu);
            if (s.lost.contains(m)) break;
          }
          try {
            s.with_client([&](StoreClient& c) {
              c.wait({done}, s.interval);
              return 0;
            });
            break;
          } catch (const StoreTimeout&) {
          }
        }
      }
      std::optional<FailureRecord> failure = failure_now();
      s.watching_lost = false;
      s.with_client([&](StoreClient& c) {
        c.set(s.rkey(round, "verdict"), failure ? encode(*failure) : "ok");
        return 0;
      });
      // Keep the store up until every live machine has read the verdict.
      std::vector<std::string> acks;
      for (int m = 1; m < s.o.num_machines; ++m) {
        std::lock_guard lock(s.mu);
        if (!s.lost.contains(m)) acks.push_back(s.rkey(round, fmt::format("ack/{}", m)));
      }
      if (!acks.empty()) {
        try {
          s.with_client([&](StoreClient& c) {
            c.wait(acks, s.o.heartbeat_timeout);
            return 0;
          });
        } catch (const StoreError&) {
        }
      }
      return failure;
    }
    if (auto lost = s.wait_key(s.rkey(round, "verdict"))) return lost;
    std::string verdict =
        s.with_client([&](StoreClient& c) { return c.get(s.rkey(round, "verdict")); });
    s.with_client([&](StoreClient& c) {
      c.set(s.rkey(round, fmt::format("ack/{}", s.o.machine_rank)), "1");
      return 0;
    });
    if (verdict == "ok") return std::nullopt;
    return decode_failure(verdict);
  } catch (const std::invalid_argument&) {
    return local;
  } catch (const StoreError& e) {
    if (s.o.machine_rank == 0) throw;
    return s.machine0_lost(e.what());
  }
}

}  // namespace xlaunch::cluster
