// The store backend's monitor thread: this launcher's heartbeat, and the watch that stops a
// round: a failure published anywhere; on the host, a launcher whose heartbeats stopped or
// (elastic jobs) a newcomer worth re-forming for; elsewhere, machine 0's store lost.
#include <map>
#include <set>

#include "cluster/blame.hpp"
#include "cluster/heartbeat_watch.hpp"
#include "cluster/membership.hpp"
#include "cluster/store_backend_impl.hpp"

namespace xlaunch::cluster {

using rendezvous::StoreError;
using rendezvous::StoreTimeout;
using Steady = std::chrono::steady_clock;

// The monitor thread's own connection, clocks and the last round it reported.
class StoreBackend::Impl::Monitor {
 public:
  explicit Monitor(Impl& s)
      : s_(s), is_host_(s.o.machine_rank == 0), beats_(s.o.heartbeat_timeout) {}

  void run() {
    while (!s_.stopping) {
      const int r = s_.round.load();
      try {
        note_pause(Steady::now());
        beat();
        int machines = 0;
        {
          std::lock_guard lock(s_.mu);
          machines = s_.o.num_machines;
          is_host_ = s_.o.machine_rank == 0;
        }
        if (is_host_ && s_.watching_lost) check_heartbeats(r, machines);
        if (is_host_ && s_.elastic() && s_.watching_lost && reported_ != r) {
          admit_newcomer(r, machines);
        }
        wait_for_failure(r);
      } catch (const StoreTimeout&) {
      } catch (const std::invalid_argument&) {
      } catch (const StoreError& e) {
        if (store_lost(r, e)) return;
      }
    }
  }

 private:
  void notify(int r, const FailureRecord& record) {
    if (reported_ == r) return;
    reported_ = r;
    if (s_.on_failure) s_.on_failure(r, record);
  }

  // (Re)connects within what is left of heartbeat_timeout, and beats once.
  void beat() {
    if (!c_) {
      c_ = s_.connect(std::max(
          s_.o.heartbeat_timeout -
              std::chrono::duration_cast<std::chrono::milliseconds>(Steady::now() - last_ok_),
          std::chrono::milliseconds(1)));
    }
    s_.beat(*c_);
    last_ok_ = Steady::now();
  }

  // A gap between two turns of this loop: the launcher was stopped (SIGSTOP, a frozen VM) or
  // starved. On the host, its store did not answer meanwhile either: heartbeats that stood
  // still prove nothing (the watch starts again), and after a gap near --heartbeat_timeout
  // the others may have given it up. What they saw last is kept to tell later.
  void note_pause(Steady::time_point now) {
    const auto gap = now - last_turn_;
    last_turn_ = now;
    if (!is_host_ || gap < s_.o.heartbeat_timeout / 2) return;
    beats_.restart(now);
    if (gap >= s_.o.heartbeat_timeout - 2 * s_.interval) {
      given_up_ = true;
      at_resume_.clear();
      beat_since_.clear();
    }
  }

  // The host: a launcher whose heartbeat stood still too long is lost, and blamed for round r;
  // unless this host was away long enough to be given up, and nobody beat since it came back:
  // then the others ended because of it, and it blames itself as they did.
  void check_heartbeats(int r, int machines) {
    bool anyone_silent = false;
    for (int m = 1; m < machines; ++m) {
      {
        std::lock_guard lock(s_.mu);
        if (s_.lost.contains(m)) continue;
      }
      const std::string hb = s_.hb_key(m);
      const std::string value = s_.read_beat(*c_, hb).value_or("");
      if (given_up_) {
        auto [at, fresh] = at_resume_.try_emplace(m, value);
        if (!fresh && at->second != value) beat_since_.insert(m);
        anyone_silent = anyone_silent || !beat_since_.contains(m);
      }
      if (!beats_.stalled(hb, value, Steady::now())) continue;
      if (given_up_ && !beat_since_.contains(m)) return blame_self(r, machines);
      FailureRecord record = heartbeat_lost(m, s_.host_of(m), s_.o.heartbeat_timeout, s_.elastic());
      {
        std::lock_guard lock(s_.mu);
        s_.lost.insert(m);
      }
      const std::string failure = s_.rkey(r, "failure");
      notify(r, s_.read_failure(c_->compare_set(failure, "", encode(record)), failure));
    }
    if (given_up_ && !anyone_silent) given_up_ = false;  // every one beat again: all is well
  }

  // The host was given up (see check_heartbeats): the machines silent since it came back are
  // lost, and the round's failure is the one they reported, machine 0's store unreachable.
  void blame_self(int r, int machines) {
    {
      std::lock_guard lock(s_.mu);
      for (int m = 1; m < machines; ++m)
        if (!beat_since_.contains(m)) s_.lost.insert(m);
    }
    given_up_ = false;
    const FailureRecord record = store_unreachable(s_.host_of(0), s_.o.advertised_store_host,
                                                   s_.o.store_port, s_.o.heartbeat_timeout);
    const std::string failure = s_.rkey(r, "failure");
    notify(r, s_.read_failure(c_->compare_set(failure, "", encode(record)), failure));
  }

  // The host of an elastic job: a newcomer with room and a restart left stops round r.
  void admit_newcomer(int r, int machines) {
    s_.poll_arrivals(*c_);
    std::optional<JoinRecord> newcomer;
    {
      std::lock_guard lock(s_.arr_mu);
      if (admits_newcomer(machines, static_cast<int>(s_.waiting.size()), s_.o.max_machines, r,
                          s_.o.max_restarts)) {
        newcomer = s_.records.at(s_.waiting.front());
      }
    }
    if (!newcomer) return;
    const std::string failure = s_.rkey(r, "failure");
    notify(r,
           s_.read_failure(
               c_->compare_set(failure, "", encode(machine_joined(*newcomer, machines))), failure));
  }

  // One interval: round r's failure, once, or a pause once it is reported.
  void wait_for_failure(int r) {
    if (reported_ != r) {
      try {
        const std::string failure = s_.rkey(r, "failure");
        c_->wait({failure}, s_.interval);
        notify(r, s_.read_failure(c_->get(failure), failure));
      } catch (const StoreTimeout&) {
      }
      return;
    }
    std::unique_lock lock(s_.mu);
    s_.wake.wait_for(lock, s_.interval, [&] { return s_.stopping.load(); });
  }

  // The store failed: a launcher other than the host that has not reached it for
  // heartbeat_timeout reports machine 0 lost (true: the monitor ends); else retry soon.
  bool store_lost(int r, const StoreError& e) {
    c_.reset();
    if (!is_host_ && Steady::now() - last_ok_ >= s_.o.heartbeat_timeout) {
      FailureRecord record = s_.machine0_lost(e.what());
      {
        std::lock_guard lock(s_.mu);
        s_.store_lost = record;
      }
      s_.wake.notify_all();
      notify(r, record);
      return true;
    }
    std::unique_lock lock(s_.mu);
    s_.wake.wait_for(lock, s_.interval / 2, [&] { return s_.stopping.load(); });
    return false;
  }

  Impl& s_;
  std::optional<rendezvous::StoreClient> c_;
  int reported_ = -1;
  Steady::time_point last_ok_ = Steady::now();
  Steady::time_point last_turn_ = Steady::now();
  bool is_host_;
  HeartbeatWatch beats_;
  // The host came back from a pause the others may have given it up for: the heartbeats it
  // read first, and the machines that beat since.
  bool given_up_ = false;
  std::map<int, std::string> at_resume_;
  std::set<int> beat_since_;
};

void StoreBackend::Impl::monitor_loop() { Monitor(*this).run(); }

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

}  // namespace xlaunch::cluster
