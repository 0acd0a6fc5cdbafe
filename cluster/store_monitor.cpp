// The store backend's monitor thread: this launcher's heartbeat, and the watch that stops a
// round: a failure published anywhere; on the host, a launcher whose heartbeats stopped or
// (elastic jobs) a newcomer worth re-forming for; elsewhere, machine 0's store lost.
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
    c_->add(s_.my_hb_key(), 1);
    last_ok_ = Steady::now();
  }

  // The host: a launcher whose count stood still too long is lost, and blamed for round r.
  void check_heartbeats(int r, int machines) {
    for (int m = 1; m < machines; ++m) {
      {
        std::lock_guard lock(s_.mu);
        if (s_.lost.contains(m)) continue;
      }
      const std::string hb = s_.hb_key(m);
      const std::int64_t count = c_->add(hb, 0);
      if (!beats_.stalled(hb, count, Steady::now())) continue;
      FailureRecord record = heartbeat_lost(m, s_.host_of(m), s_.o.heartbeat_timeout, s_.elastic());
      {
        std::lock_guard lock(s_.mu);
        s_.lost.insert(m);
      }
      std::string won = c_->compare_set(s_.rkey(r, "failure"), "", encode(record));
      notify(r, decode_failure(won));
    }
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
    std::string won =
        c_->compare_set(s_.rkey(r, "failure"), "", encode(machine_joined(*newcomer, machines)));
    notify(r, decode_failure(won));
  }

  // One interval: round r's failure, once, or a pause once it is reported.
  void wait_for_failure(int r) {
    if (reported_ != r) {
      try {
        c_->wait({s_.rkey(r, "failure")}, s_.interval);
        notify(r, decode_failure(c_->get(s_.rkey(r, "failure"))));
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
  bool is_host_;
  HeartbeatWatch beats_;
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
