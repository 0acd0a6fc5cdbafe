// StoreBackend's state, private to its files: store_backend.cpp (connections, failures, the
// public verbs that need no more), store_join.cpp (the join and an elastic job's round 0),
// store_members.cpp (the host's view of arrivals; publishing and adopting a round's
// members), store_round.cpp (rounds after the first and their verdicts) and
// store_monitor.cpp (heartbeats, the watch for failures and newcomers).
#pragma once

#include <fmt/format.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "cluster/record_codec.hpp"
#include "cluster/store_backend.hpp"
#include "rendezvous/store_client.hpp"

namespace xlaunch::cluster {

struct StoreBackend::Impl {
  using Steady = std::chrono::steady_clock;
  using StoreClient = rendezvous::StoreClient;

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
  OnStop on_failure;

  // The layout this launcher runs (fixed jobs: the join's; elastic: the round's).
  Layout layout;
  int slot = 0;                        // this launcher's arrival slot
  JoinRecord me;                       // what it registered
  std::atomic<std::int64_t> beats{0};  // this launcher's heartbeats so far
  // Elastic jobs, the host's view (guarded by arr_mu): every record read (by arrival slot),
  // the newest slot read, launchers waiting to be taken in.
  std::mutex arr_mu;
  std::map<int, JoinRecord> records;
  int known = 0;
  std::vector<int> waiting;

  explicit Impl(AgentOptions options);

  std::string key(std::string_view suffix) const {
    return fmt::format("xlaunch/{}/{}", o.run_id, suffix);
  }
  std::string rkey(int r, std::string_view suffix) const {
    return key(fmt::format("round/{}/{}", r, suffix));
  }
  bool elastic() const { return o.elastic(); }

  // --- store_backend.cpp: connections and failures -----------------------------------------
  // `interruptible`: retries end at a stop signal (check_stop says so then).
  StoreClient connect(std::chrono::milliseconds timeout, bool interruptible = false) const;
  std::string host_of(int m) const;
  // Heartbeat key of machine rank m: per arrival slot in elastic jobs, whose ranks change.
  std::string hb_key(int m);
  std::string my_hb_key() const;
  FailureRecord machine0_lost(const std::string& why) const;
  std::optional<FailureRecord> lost_store();
  // Blocks until `k` exists or machine 0 counts as lost; nullopt means the key is there.
  std::optional<FailureRecord> wait_key(const std::string& k);
  FailureRecord report_failure(int round, const FailureRecord& record);
  // A heartbeat: this launcher's own counter, written (not added to, so that a value another
  // program left there cannot stop it). read_beat: the value, nullopt when absent.
  void beat(StoreClient& c);
  std::optional<std::string> read_beat(StoreClient& c, const std::string& k);
  // The failure record at `k`; a malformed one stops the round with the same words everywhere.
  FailureRecord read_failure(std::string_view text, const std::string& k) const {
    return failure_at(text, k, o.run_id);
  }
  // Why adding to the counter `k` failed, when its value is not a number.
  std::optional<MalformedRecord> malformed_counter(const std::string& k) const;

  // Runs `op` on the main client, reconnecting once after a broken connection (machine 0
  // empties the store between rounds, which closes parked waits).
  template <typename Op>
  auto with_client(Op op) {
    try {
      if (!client) client = connect(o.heartbeat_timeout);
      return op(*client);
    } catch (const rendezvous::StoreTimeout&) {
      throw;
    } catch (const rendezvous::StoreError&) {
      client.reset();
      client = connect(o.heartbeat_timeout);
      return op(*client);
    }
  }

  // --- store_join.cpp ----------------------------------------------------------------------
  // A stop signal (Ctrl-C) that came during the join: thrown between its waits.
  struct Interrupted {
    int signal;
  };
  bool stop_checks = true;  // off once the signal is the supervisor's (main thread only)
  std::optional<int> stop_signal() const { return stop_checks ? o.pending_stop() : std::nullopt; }
  void check_stop() const;
  // Waits until `k` exists (true) or `watch` does (false; "" watches nothing), one short
  // slice at a time so that check_stop runs between them; StoreTimeout at `deadline`.
  bool wait_join_key(StoreClient& c, const std::string& k, const std::string& watch,
                     Steady::time_point deadline);
  void register_arrival();
  Membership fixed_join(Steady::time_point deadline);
  // Both fill `arrivals` with the job's records and `keys` with where each was read.
  std::variant<Layout, JoinProblem> decide_job(Steady::time_point deadline,
                                               std::vector<JoinRecord>& arrivals,
                                               std::vector<std::string>& keys);
  std::variant<Layout, JoinProblem> follow_job(Steady::time_point deadline,
                                               std::vector<JoinRecord>& arrivals,
                                               std::vector<std::string>& keys);
  // The layout another launcher wrote first (a withdrawal), as follow_job reads it; machine 0
  // also waits for the others to read a problem.
  std::variant<Layout, JoinProblem> follow_standing_layout(Steady::time_point deadline,
                                                           std::vector<JoinRecord>& arrivals,
                                                           std::vector<std::string>& keys);
  // Interrupted in a fixed job's join: an error layout naming this launcher ends it for all,
  // unless a layout stands already (then that one is followed).
  std::variant<Layout, JoinProblem> withdraw(int signal, Steady::time_point deadline,
                                             std::vector<JoinRecord>& arrivals,
                                             std::vector<std::string>& keys);
  // Machine 0 exits on a problem, and its store with it: the others read why first (not
  // long when it leaves for an interrupt).
  void arrivals_ack_wait(bool interrupted);
  std::vector<int> read_later_arrivals(std::vector<JoinRecord>& arrivals);
  // Waits for `acks` up to --heartbeat_timeout (1 s when interrupted), or a stop signal.
  void wait_for_acks(StoreClient& c, const std::vector<std::string>& acks, bool interrupted);
  Membership elastic_join();
  Membership elastic_host_first_round(StoreClient& c);
  Membership elastic_wait_for_round(StoreClient& c, int from_round);
  // One look for the round that takes this launcher in, from round `target` on (which it
  // advances); throws AgentError when it was refused, or the job ended or cannot form.
  std::optional<Membership> look_for_round(StoreClient& c, int& target);
  // Interrupted before an elastic job took this launcher in: it leaves alone (taken/<slot>).
  Membership elastic_withdraw(int signal);

  // --- store_members.cpp: elastic jobs -----------------------------------------------------
  void poll_arrivals(StoreClient& c);
  Membership publish_round(StoreClient& c, int r, const std::vector<int>& next);
  // Claims each newcomer in `next` for the round (taken/<k>); false when one withdrew
  // first: it is dropped, and the members must be chosen again.
  bool claim_members(StoreClient& c, const std::vector<int>& next);
  void adopt(const Layout& l, int rank, const std::vector<JoinRecord>& recs);
  std::optional<Membership> find_me(StoreClient& c, const Layout& l);
  int known_now();
  std::vector<JoinRecord> records_of(const std::vector<int>& slots);
  [[noreturn]] void fail_round(StoreClient& c, int r, const JoinProblem& problem,
                               bool interrupted = false);
  void ack_wait(StoreClient& c, bool interrupted);
  // A waiting newcomer in slot k whose taken/<k> reads `state`: whether it still waits
  // ("" or "in"); one that withdrew ("out") or whose record is not xlaunch's (then refused)
  // does not. arr_mu held.
  bool still_waiting(StoreClient& c, int k, const std::string& state);

  // --- store_round.cpp ---------------------------------------------------------------------
  Membership elastic_host_next_round(int r, const std::function<void()>& clear_store);
  Membership elastic_next_round(int r);
  std::optional<FailureRecord> host_verdict(int round);
  std::optional<FailureRecord> follower_verdict(int round);

  // --- store_monitor.cpp -------------------------------------------------------------------
  class Monitor;
  void monitor_loop();
};

}  // namespace xlaunch::cluster
