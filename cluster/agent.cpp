#include "cluster/agent.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <condition_variable>
#include <map>

#include "launcher/console.hpp"
#include "launcher/text.hpp"
#include "rendezvous/store_client.hpp"

namespace xlaunch::cluster {

using launcher::parse_int;
using launcher::say;
using launcher::split;

using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;
using rendezvous::StoreClient;
using rendezvous::StoreError;
using rendezvous::StoreTimeout;

namespace {

// Records are "key=value" lines; values never hold a newline (they are flattened).
std::string flat(std::string_view text) {
  std::string out(text);
  std::replace(out.begin(), out.end(), '\n', ' ');
  return out;
}

std::map<std::string, std::string> parse_lines(std::string_view text) {
  std::map<std::string, std::string> fields;
  for (std::string_view line : split(text, '\n')) {
    auto eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    fields[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
  }
  return fields;
}

int int_field(const std::map<std::string, std::string>& fields, const char* name) {
  int value = 0;
  auto it = fields.find(name);
  if (it == fields.end() || !parse_int(it->second, value)) {
    throw std::invalid_argument(fmt::format("record field '{}' is missing or not a number", name));
  }
  return value;
}

std::string field(const std::map<std::string, std::string>& fields, const char* name) {
  auto it = fields.find(name);
  return it == fields.end() ? std::string() : it->second;
}

std::string who(const JoinRecord& r) {
  return fmt::format("machine {} ({}, pid {})", r.machine_rank, r.host, r.pid);
}

double seconds(std::chrono::milliseconds d) { return static_cast<double>(d.count()) / 1000.0; }

}  // namespace

std::string encode(const JoinRecord& r) {
  return fmt::format("machine={}\nhost={}\npid={}\nlocal={}\nversion={}\n{}", r.machine_rank,
                     flat(r.host), r.pid, r.local_processes, flat(r.version), r.settings);
}

JoinRecord decode_join(std::string_view text) {
  auto fields = parse_lines(text);
  JoinRecord r;
  r.machine_rank = int_field(fields, "machine");
  r.host = field(fields, "host");
  r.pid = int_field(fields, "pid");
  r.local_processes = int_field(fields, "local");
  r.version = field(fields, "version");
  for (const char* fixed : {"machine", "host", "pid", "local", "version"}) fields.erase(fixed);
  for (const auto& [k, v] : fields) r.settings += k + "=" + v + "\n";
  return r;
}

std::string agreed_settings(const std::vector<std::pair<std::string, std::string>>& values) {
  std::map<std::string, std::string> sorted;
  for (const auto& [k, v] : values) sorted["s." + k] = flat(v);
  std::string out;
  for (const auto& [k, v] : sorted) out += k + "=" + v + "\n";
  return out;
}

int Layout::world_size() const {
  int total = 0;
  for (int n : local_processes) total += n;
  return total;
}

int Layout::rank_offset(int machine_rank) const {
  int offset = 0;
  for (int m = 0; m < machine_rank; ++m) offset += local_processes.at(m);
  return offset;
}

std::variant<Layout, JoinProblem> decide_layout(const std::vector<JoinRecord>& arrivals,
                                                int num_machines,
                                                std::optional<int> total_processes) {
  std::vector<std::string> problems;
  std::map<int, const JoinRecord*> by_rank;
  for (const JoinRecord& r : arrivals) {
    if (r.machine_rank < 0 || r.machine_rank >= num_machines) {
      problems.push_back(fmt::format("{} has machine rank {}, outside 0..{}", who(r),
                                     r.machine_rank, num_machines - 1));
      continue;
    }
    auto [it, fresh] = by_rank.emplace(r.machine_rank, &r);
    if (!fresh) {
      problems.push_back(fmt::format(
          "machine rank {} was given to two launchers: {} (pid {}) and {} (pid {}); give each "
          "machine its own --machine_rank from 0 to {}",
          r.machine_rank, it->second->host, it->second->pid, r.host, r.pid, num_machines - 1));
    }
  }
  if (!problems.empty() || static_cast<int>(by_rank.size()) != num_machines) {
    if (problems.empty()) problems.push_back("not every machine rank arrived");
    return JoinProblem{
        2, fmt::format("the machines cannot form one job:\n  {}", fmt::join(problems, "\n  "))};
  }

  const JoinRecord& first = *by_rank.at(0);
  for (const auto& [rank, r] : by_rank) {
    if (r->version != first.version) {
      problems.push_back(fmt::format(
          "xlaunch versions differ: machine 0 ({}) runs {}, machine {} ({}) runs {}; install "
          "the same version everywhere",
          first.host, first.version, rank, r->host, r->version));
    }
  }
  auto reference = parse_lines(first.settings);
  for (const auto& [rank, r] : by_rank) {
    auto mine = parse_lines(r->settings);
    std::set<std::string> keys;
    for (const auto& kv : reference) keys.insert(kv.first);
    for (const auto& kv : mine) keys.insert(kv.first);
    for (const std::string& k : keys) {
      std::string a = reference.contains(k) ? reference[k] : "(unset)";
      std::string b = mine.contains(k) ? mine[k] : "(unset)";
      if (a != b) {
        problems.push_back(fmt::format("{}: machine 0 ({}) has {}, machine {} ({}) has {}",
                                       k.substr(2), first.host, a, rank, r->host, b));
      }
    }
  }
  Layout layout;
  for (const auto& [rank, r] : by_rank) layout.local_processes.push_back(r->local_processes);
  if (problems.empty() && total_processes && layout.world_size() != *total_processes) {
    std::vector<std::string> counts;
    for (const auto& [rank, r] : by_rank)
      counts.push_back(fmt::format("{}: {}", rank, r->local_processes));
    problems.push_back(
        fmt::format("--num_processes {} but the machines' local counts add up to {} (machine {})",
                    *total_processes, layout.world_size(), fmt::join(counts, ", ")));
  }
  if (!problems.empty()) {
    return JoinProblem{2, fmt::format("the machines disagree (give every machine the same "
                                      "flags and config file, and the same xlaunch):\n  {}",
                                      fmt::join(problems, "\n  "))};
  }
  return layout;
}

JoinProblem missing_machines(const std::vector<JoinRecord>& arrived, int num_machines,
                             std::chrono::milliseconds timeout) {
  std::set<int> present;
  std::vector<std::string> joined;
  std::vector<JoinRecord> sorted = arrived;
  std::sort(sorted.begin(), sorted.end(), [](const JoinRecord& a, const JoinRecord& b) {
    return a.machine_rank < b.machine_rank;
  });
  for (const JoinRecord& r : sorted) {
    present.insert(r.machine_rank);
    joined.push_back(fmt::format("{} ({})", r.machine_rank, r.host));
  }
  std::vector<int> missing;
  for (int m = 0; m < num_machines; ++m) {
    if (!present.contains(m)) missing.push_back(m);
  }
  return JoinProblem{
      1, fmt::format("machine rank{} {} did not join within --rdzv_timeout {:g}s (joined: {}); "
                     "start xlaunch on every machine with the same --main_process_ip/port, or "
                     "raise --rdzv_timeout",
                     missing.size() == 1 ? "" : "s", fmt::join(missing, ", "), seconds(timeout),
                     joined.empty() ? "none" : fmt::format("{}", fmt::join(joined, ", ")))};
}

std::string encode_layout(const std::variant<Layout, JoinProblem>& decision) {
  if (const auto* layout = std::get_if<Layout>(&decision)) {
    return fmt::format("ok\n{}\n{}", fmt::join(layout->local_processes, ","), flat(layout->run_id));
  }
  const auto& problem = std::get<JoinProblem>(decision);
  return fmt::format("error\n{}\n{}", problem.exit_code, problem.message);
}

std::variant<Layout, JoinProblem> decode_layout(std::string_view text) {
  auto nl = text.find('\n');
  std::string_view head = text.substr(0, nl);
  std::string_view rest = nl == std::string_view::npos ? "" : text.substr(nl + 1);
  if (head == "ok") {
    Layout layout;
    auto nl2 = rest.find('\n');
    if (nl2 != std::string_view::npos) {
      layout.run_id = std::string(rest.substr(nl2 + 1));
      rest = rest.substr(0, nl2);
    }
    for (std::string_view item : split(rest, ',')) {
      int n = 0;
      if (!parse_int(item, n)) throw std::invalid_argument("bad layout");
      layout.local_processes.push_back(n);
    }
    return layout;
  }
  JoinProblem problem;
  auto nl2 = rest.find('\n');
  if (head != "error" || nl2 == std::string_view::npos ||
      !parse_int(rest.substr(0, nl2), problem.exit_code)) {
    throw std::invalid_argument("bad layout");
  }
  problem.message = std::string(rest.substr(nl2 + 1));
  return problem;
}

std::string encode(const FailureRecord& r) {
  return fmt::format("machine={}\nhost={}\nrank={}\nexit_code={}\nrestartable={}\ncause={}\n",
                     r.machine_rank, flat(r.host), r.rank, r.exit_code, r.restartable ? 1 : 0,
                     flat(r.cause));
}

FailureRecord decode_failure(std::string_view text) {
  auto fields = parse_lines(text);
  FailureRecord r;
  r.machine_rank = int_field(fields, "machine");
  r.host = field(fields, "host");
  r.rank = int_field(fields, "rank");
  r.exit_code = int_field(fields, "exit_code");
  r.restartable = field(fields, "restartable") == "1";
  r.cause = field(fields, "cause");
  return r;
}

// --- the agent -------------------------------------------------------------------------

struct Agent::Impl {
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
  OnFailure on_failure;

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

  std::string host_of(int m) const { return m < static_cast<int>(hosts.size()) ? hosts[m] : "?"; }

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

  void monitor_loop() {
    std::optional<StoreClient> c;
    int reported = -1;
    Steady::time_point last_ok = Steady::now();
    std::map<int, std::pair<std::int64_t, Steady::time_point>> seen;
    for (int m = 0; m < o.num_machines; ++m) seen[m] = {-1, Steady::now()};
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
        c->add(key(fmt::format("hb/{}", o.machine_rank)), 1);
        last_ok = Steady::now();
        if (o.machine_rank == 0 && watching_lost) {
          for (int m = 1; m < o.num_machines; ++m) {
            {
              std::lock_guard lock(mu);
              if (lost.contains(m)) continue;
            }
            std::int64_t beats = c->add(key(fmt::format("hb/{}", m)), 0);
            auto& [value, when] = seen[m];
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
              {
                std::lock_guard lock(mu);
                lost.insert(m);
              }
              std::string won = c->compare_set(rkey(r, "failure"), "", encode(rec));
              notify(r, decode_failure(won));
            }
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
        if (o.machine_rank != 0 && Steady::now() - last_ok >= o.heartbeat_timeout) {
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

Agent::Agent(AgentOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Agent::~Agent() { stop_monitor(); }

std::string Agent::key(std::string_view suffix) const { return impl_->key(suffix); }

Layout Agent::join() {
  Impl& s = *impl_;
  const auto deadline = Steady::now() + s.o.rdzv_timeout;
  auto remaining = [&] {
    return std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Steady::now()),
                    std::chrono::milliseconds(1));
  };
  int slot = 0;
  try {
    s.client = s.connect(s.o.rdzv_timeout);
    JoinRecord me{s.o.machine_rank,    s.o.host,    s.o.pid,
                  s.o.local_processes, s.o.version, s.o.settings};
    slot = static_cast<int>(s.client->add(s.key("arrivals"), 1));
    s.client->set(s.key(fmt::format("arrival/{}", slot)), encode(me));
  } catch (const StoreError& e) {
    throw AgentError(
        fmt::format("machine {}: cannot reach machine 0's store at {}:{} within --rdzv_timeout "
                    "{:g}s: {}; check that machine 0's launcher runs, --main_process_ip/port, "
                    "and the firewall",
                    s.o.machine_rank, s.o.store_host, s.o.store_port, seconds(s.o.rdzv_timeout),
                    e.what()),
        1);
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
  return layout;
}

void Agent::start_monitor(OnFailure on_failure) {
  Impl& s = *impl_;
  s.on_failure = std::move(on_failure);
  s.monitor = std::thread([&s] { s.monitor_loop(); });
}

void Agent::stop_monitor() {
  Impl& s = *impl_;
  s.stopping = true;
  s.wake.notify_all();
  if (s.monitor.joinable()) s.monitor.join();
}

void Agent::begin_round(int round, const std::function<void()>& clear_store) {
  Impl& s = *impl_;
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
    return;
  }
  if (auto lost = s.wait_key(s.rkey(round, "go"))) {
    throw AgentError(fmt::format("job failed: {}", lost->describe()), lost->exit_code);
  }
}

FailureRecord Agent::report_failure(int round, const FailureRecord& record) {
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

std::optional<FailureRecord> Agent::finish_round(int round, std::optional<FailureRecord> local) {
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
