#include <fmt/format.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "config/atomic_write.hpp"
#include "diagnose/proc_sample.hpp"
#include "diagnose/stacks_registry.hpp"
#include "diagnose/stacks_site.hpp"
#include "diagnose/stall_detect.hpp"
#include "diagnose/stall_dial.hpp"
#include "diagnose/stall_monitor.hpp"
#include "diagnose/stall_report.hpp"

namespace asio = boost::asio;

namespace xlaunch::diagnose {
namespace {

constexpr auto kTick = std::chrono::seconds(1);
constexpr auto kDumpPoll = std::chrono::milliseconds(100);
constexpr int kDumpPolls = 30;  // a rank that has not dumped within 3s is reported without
constexpr int kDialTicks = 3;   // samples in a row before "keeps dialing" is said

std::string read_from(const std::string& path, std::uintmax_t offset) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  in.seekg(static_cast<std::streamoff>(offset));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::uintmax_t size_of(const std::string& path) {
  std::error_code ec;
  const auto n = std::filesystem::file_size(path, ec);
  return ec ? 0 : n;
}

struct RankInfo {
  int rank = 0;
  long pid = 0;
  bool started = false;
  bool alive = false;
  std::string ended;
  std::optional<Clock::time_point> ended_at;
  std::optional<std::string> last_line;
  std::optional<Clock::time_point> last_output;
  std::uint64_t lines = 0;
  // The latest sample.
  double cpu_seconds = 0;
  std::uint64_t store_requests = 0;
  std::vector<std::string> waiting_keys;
  std::vector<std::string> connecting;
  int dial_ticks = 0;
  bool dial_reported = false;
  std::optional<std::string> dial_target;  // where it dials instead of the store
};

}  // namespace

struct StallMonitor::Impl {
  asio::io_context& io;
  const Options options;
  const Output out;
  StoreClients store_clients;
  StallMonitor* self;
  std::string temp_dir;  // python/sitecustomize.py and stacks/, removed at the end
  std::string python_dir;
  std::string stacks_dir;
  std::optional<LauncherRegistration> registration;
  asio::signal_set usr1{io};
  asio::steady_timer tick_timer{io};
  asio::steady_timer dump_timer{io};
  std::map<int, RankInfo> ranks;  // by local rank
  std::optional<StallDetector> detector;
  bool active = false;
  bool collecting = false;
  bool dump_again = false;  // a request came while a dump was being collected
  std::optional<std::string> last_stall_json;
  std::string store_addr;  // this attempt's
  std::uint16_t store_port = 0;

  Impl(asio::io_context& i, Options o, Output w, StoreClients s, StallMonitor* m)
      : io(i), options(std::move(o)), out(std::move(w)), store_clients(std::move(s)), self(m) {
    if (options.python_stacks) make_python_dir();
    registration.emplace(options.registry_dir, options.run_id);
    usr1.add(SIGUSR1);
  }

  ~Impl() {
    // Once nobody dumps stacks, a late SIGUSR1 must not end the launcher (its default
    // action) while it writes the summary.
    boost::system::error_code ec_ignored;
    usr1.clear(ec_ignored);
    ::signal(SIGUSR1, SIG_IGN);
    if (temp_dir.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(temp_dir, ec);
  }

  void make_python_dir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        fmt::format("{}/xlaunch-stacks-{}-XXXXXX", tmp && *tmp ? tmp : "/tmp", options.run_id);
    if (::mkdtemp(pattern.data()) == nullptr) {
      out.log(
          fmt::format("python stacks off: cannot create {}: {}", pattern, std::strerror(errno)));
      return;
    }
    temp_dir = pattern;
    python_dir = temp_dir + "/python";
    stacks_dir = temp_dir + "/stacks";
    try {
      config::atomic_write(python_dir + "/sitecustomize.py", sitecustomize_text());
      std::filesystem::create_directories(stacks_dir);
    } catch (const std::exception& e) {
      out.log(fmt::format("python stacks off: {}", e.what()));
      python_dir.clear();
      stacks_dir.clear();
    }
  }

  // --- sampling --------------------------------------------------------------------

  void arm_tick() {
    tick_timer.expires_after(kTick);
    tick_timer.async_wait([this](const boost::system::error_code& ec) {
      if (ec || !active) return;
      tick();
      arm_tick();
    });
  }

  void arm_usr1() {
    usr1.async_wait([this](const boost::system::error_code& ec, int) {
      if (ec || !active) return;
      out.say("xlaunch: SIGUSR1: dumping every rank's Python stacks\n");
      dump_on_request();
      arm_usr1();
    });
  }

  std::optional<std::pair<std::string, std::string>> script_address(const RankInfo& r) const {
    if (stacks_dir.empty()) return std::nullopt;
    std::ifstream in(notes_file(stacks_dir, r.rank, r.pid));
    if (!in) return std::nullopt;
    std::pair<std::string, std::string> out;
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("MASTER_ADDR=", 0) == 0) out.first = line.substr(12);
      if (line.rfind("MASTER_PORT=", 0) == 0) out.second = line.substr(12);
    }
    return out;
  }

  void tick() {
    std::map<std::uint16_t, const rendezvous::StoreServer::ClientInfo*> by_port;
    std::vector<rendezvous::StoreServer::ClientInfo> clients;
    if (store_clients) clients = store_clients();
    for (const auto& c : clients) by_port[c.peer_port] = &c;
    std::optional<SocketTables> tables;
    std::vector<RankActivity> activity;
    std::vector<long> roots;
    for (auto& [local, r] : ranks) {
      if (r.started && r.alive) roots.push_back(r.pid);
    }
    const std::vector<TreeSample> trees = sample_trees(roots);
    std::size_t next = 0;
    for (auto& [local, r] : ranks) {
      if (!r.started) continue;
      r.waiting_keys.clear();
      r.connecting.clear();
      if (r.alive) {
        const TreeSample& tree = trees[next++];
        if (tree.alive) {
          r.cpu_seconds = tree.cpu_seconds;
          if (!tables) tables = read_socket_tables(r.pid);
          sample_sockets(r, tree, *tables, by_port);
        }
      }
      activity.push_back({r.rank, r.alive, r.cpu_seconds, r.lines, r.store_requests});
    }
    if (detector && !collecting && detector->update(std::chrono::steady_clock::now(), activity)) {
      const double window =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - detector->quiet_since())
              .count();
      collect_stacks(
          [this, window](std::vector<RankStacks> stacks) { report_stall(window, stacks); });
    }
  }

  void sample_sockets(
      RankInfo& r, const TreeSample& tree, const SocketTables& tables,
      const std::map<std::uint16_t, const rendezvous::StoreServer::ClientInfo*>& by_port) {
    bool to_store = false;
    std::uint64_t requests = 0;
    int unlisted = 0;
    for (unsigned long inode : tree.socket_inodes) {
      if (!tables.listed.contains(inode)) ++unlisted;
    }
    for (const SocketEntry& e : tables.inet) {
      if (!tree.socket_inodes.contains(e.inode)) continue;
      if (e.state == kTcpSynSent) r.connecting.push_back(endpoint(e.remote_addr, e.remote_port));
      if (e.state != kTcpEstablished || e.remote_port != store_port) continue;
      to_store = true;
      if (auto c = by_port.find(e.local_port); c != by_port.end()) {
        requests += c->second->requests;
        r.waiting_keys.insert(r.waiting_keys.end(), c->second->waiting.begin(),
                              c->second->waiting.end());
      }
    }
    r.store_requests = requests;
    check_dialing(r, to_store, unlisted);
  }

  void check_dialing(RankInfo& r, bool to_store, int unlisted) {
    if (to_store) {
      r.dial_ticks = 0;
      r.dial_target.reset();
      return;
    }
    DialEvidence e;
    e.rank = r.rank;
    e.connecting = r.connecting;
    e.unlisted_sockets = unlisted;
    if (auto script = script_address(r)) {
      if (!script->first.empty()) e.script_addr = script->first;
      if (!script->second.empty()) e.script_port = script->second;
    }
    const auto target = wrong_target(e, store_addr, store_port);
    r.dial_target = target;
    if (!target) {
      r.dial_ticks = 0;
      return;
    }
    if (++r.dial_ticks < kDialTicks || r.dial_reported) return;
    r.dial_reported = true;
    const std::string text = wrong_address_message(r.rank, *target, store_addr, store_port,
                                                   e.script_addr || e.script_port);
    out.say(text);
    out.log(text);
  }

  // --- stacks ----------------------------------------------------------------------

  struct Pending {
    int rank;
    std::string path;
    std::uintmax_t from;
    std::uintmax_t seen;
    bool done = false;
  };

  void collect_stacks(std::function<void(std::vector<RankStacks>)> done) {
    collecting = true;
    auto result = std::make_shared<std::vector<RankStacks>>();
    auto pending = std::make_shared<std::vector<Pending>>();
    for (auto& [local, r] : ranks) {
      if (!r.started) continue;
      RankStacks s;
      s.rank = r.rank;
      if (!r.alive) {
        s.missing = ended_text(state_of(r));
      } else if (!options.python_stacks) {
        s.missing = "stacks not available (--python_stacks false)";
      } else if (stacks_dir.empty() ||
                 !std::filesystem::exists(stacks_file(stacks_dir, r.rank, r.pid))) {
        // Only a worker whose faulthandler is registered may get the signal: for any other
        // program its default action is to terminate.
        s.missing = "stacks not available: not a Python worker";
      } else {
        const std::string path = stacks_file(stacks_dir, r.rank, r.pid);
        const auto size = size_of(path);
        pending->push_back({r.rank, path, size, size});
        ::kill(static_cast<pid_t>(r.pid), stacks_signal());
      }
      result->push_back(std::move(s));
    }
    poll_dumps(result, pending, 0, std::move(done));
  }

  void poll_dumps(std::shared_ptr<std::vector<RankStacks>> result,
                  std::shared_ptr<std::vector<Pending>> pending, int round,
                  std::function<void(std::vector<RankStacks>)> done) {
    bool all = true;
    for (Pending& p : *pending) {
      if (p.done) continue;
      const auto size = size_of(p.path);
      // Complete once it grew and then stayed the same for one poll.
      if (size > p.from && size == p.seen && round > 0) {
        p.done = true;
      } else {
        p.seen = size;
        all = false;
      }
    }
    if (all || round >= kDumpPolls || !active) {
      for (Pending& p : *pending) {
        for (RankStacks& s : *result) {
          if (s.rank != p.rank) continue;
          s.dump = read_from(p.path, p.from);
          if (s.dump.empty()) s.missing = "no stacks: it did not answer the dump signal in 3s";
        }
      }
      collecting = false;
      done(std::move(*result));
      if (dump_again && active) {
        dump_again = false;
        dump_on_request();
      }
      return;
    }
    dump_timer.expires_after(kDumpPoll);
    dump_timer.async_wait([this, result, pending, round,
                           done = std::move(done)](const boost::system::error_code& ec) mutable {
      if (ec) {
        collecting = false;
        return;
      }
      poll_dumps(result, pending, round + 1, std::move(done));
    });
  }

  void dump_on_request() {
    if (collecting) {
      dump_again = true;
      return;
    }
    auto requests = registration->requests();  // answered by this dump
    collect_stacks([this, requests](std::vector<RankStacks> stacks) {
      const std::string text = "xlaunch: Python stacks of every rank, identical ones once:\n" +
                               format_stack_groups(group_stacks(stacks), "xlaunch:   ");
      out.say(text);
      out.log(text);
      registration->publish_stacks(text);
      registration->answer(requests);
    });
  }

  RankStallState state_of(const RankInfo& r) const {
    RankStallState s;
    s.rank = r.rank;
    s.pid = r.pid;
    s.alive = r.alive;
    s.ended = r.ended;
    s.ended_at = r.ended_at;
    s.last_line = r.last_line;
    s.last_output = r.last_output;
    s.waiting_keys = r.waiting_keys;
    s.dialing = r.connecting;
    // A refused connect has no SYN_SENT row: the target found by the dial check.
    if (r.dial_target &&
        std::find(s.dialing.begin(), s.dialing.end(), *r.dial_target) == s.dialing.end()) {
      s.dialing.push_back(*r.dial_target);
    }
    if (detector) s.cpu_seconds = detector->cpu_in_window(r.rank);
    return s;
  }

  void report_stall(double window, const std::vector<RankStacks>& stacks) {
    if (!active) return;
    StallReport report;
    report.window_seconds = window;
    report.at = Clock::now();
    for (const auto& [local, r] : ranks) {
      if (r.started) report.ranks.push_back(state_of(r));
    }
    report.stacks = group_stacks(stacks);
    const std::string text = format_stall_report(report);
    out.say(text);
    out.log(text);
    last_stall_json = diagnose::stall_json(report);
    if (options.stop_on_stall && self->on_stall_stop) self->on_stall_stop();
  }
};

StallMonitor::StallMonitor(boost::asio::io_context& io, Options options, Output output,
                           StoreClients store_clients)
    : impl_(std::make_unique<Impl>(io, std::move(options), std::move(output),
                                   std::move(store_clients), this)) {}

StallMonitor::~StallMonitor() = default;

void StallMonitor::add_worker_env(std::map<std::string, std::string>& env) const {
  if (impl_->python_dir.empty()) return;
  const auto path = env.find("PYTHONPATH");
  env["PYTHONPATH"] = path != env.end() && !path->second.empty()
                          ? impl_->python_dir + ":" + path->second
                          : impl_->python_dir;
  env["XLAUNCH_STACKS_DIR"] = impl_->stacks_dir;
  env["XLAUNCH_STACKS_SIGNAL"] = std::to_string(stacks_signal());
  // A fatal signal (SIGSEGV, SIGABRT...) prints the Python traceback to stderr, which the
  // root-cause report shows.
  if (!env.contains("PYTHONFAULTHANDLER")) env["PYTHONFAULTHANDLER"] = "1";
}

void StallMonitor::begin_attempt(const std::string& store_addr, std::uint16_t store_port) {
  Impl& s = *impl_;
  s.store_addr = store_addr;
  s.store_port = store_port;
  s.ranks.clear();
  s.active = true;
  s.collecting = false;
  s.dump_again = false;
  s.detector.reset();
  if (s.options.stall_timeout.count() > 0) s.detector.emplace(s.options.stall_timeout);
  s.arm_tick();
  s.arm_usr1();
}

void StallMonitor::on_start(int local_rank, int rank, long pid) {
  RankInfo& r = impl_->ranks[local_rank];
  r = RankInfo{};
  r.rank = rank;
  r.pid = pid;
  r.started = true;
  r.alive = true;
}

void StallMonitor::on_output(int local_rank, std::string_view line) {
  RankInfo& r = impl_->ranks[local_rank];
  ++r.lines;
  if (line.empty()) return;
  r.last_line = std::string(line.substr(0, 300));
  r.last_output = Clock::now();
}

void StallMonitor::on_end(int local_rank, std::string description) {
  RankInfo& r = impl_->ranks[local_rank];
  r.alive = false;
  r.dial_target.reset();
  r.ended = std::move(description);
  r.ended_at = Clock::now();
}

void StallMonitor::end_attempt() {
  Impl& s = *impl_;
  s.active = false;
  s.tick_timer.cancel();
  s.dump_timer.cancel();
  s.usr1.cancel();
}

const std::optional<std::string>& StallMonitor::stall_json() const {
  return impl_->last_stall_json;
}

}  // namespace xlaunch::diagnose
