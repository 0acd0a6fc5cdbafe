// The store backend's connections and failures, and the verbs that need nothing else; the
// join, the members, the rounds and the monitor have files of their own
// (store_backend_impl.hpp).
#include "cluster/store_backend.hpp"

#include <algorithm>
#include <limits>

#include "cluster/blame.hpp"
#include "cluster/store_backend_impl.hpp"
#include "launcher/console.hpp"

namespace xlaunch::cluster {

using launcher::say;
using rendezvous::StoreError;
using rendezvous::StoreTimeout;
using StoreClient = rendezvous::StoreClient;

StoreBackend::Impl::Impl(AgentOptions options) : o(std::move(options)) {
  interval = std::clamp(o.heartbeat_timeout / 6, std::chrono::milliseconds(50),
                        std::chrono::milliseconds(1000));
}

StoreClient StoreBackend::Impl::connect(std::chrono::milliseconds timeout,
                                        bool interruptible) const {
  rendezvous::ClientOptions options;
  options.host = o.store_host;
  options.port = o.store_port;
  options.connect_timeout = timeout;
  options.timeout = timeout;
  if (interruptible) options.give_up = [this] { return stop_signal().has_value(); };
  return StoreClient::connect(options);
}

std::string StoreBackend::Impl::host_of(int m) const { return cluster::host_of(hosts, m); }

std::string StoreBackend::Impl::hb_key(int m) {
  if (!elastic()) return key(fmt::format("hb/{}", m));
  std::lock_guard lock(mu);
  return key(
      fmt::format("hb/s{}", m < static_cast<int>(layout.slots.size()) ? layout.slots[m] : -1));
}

std::string StoreBackend::Impl::my_hb_key() const {
  return elastic() ? key(fmt::format("hb/s{}", slot)) : key(fmt::format("hb/{}", o.machine_rank));
}

FailureRecord StoreBackend::Impl::machine0_lost(const std::string& why) const {
  // The same words on every machine: `why` (timings, attempts) differs between them.
  say("xlaunch: machine 0's store: {}\n", why);
  return store_unreachable(host_of(0), o.store_host, o.store_port, o.heartbeat_timeout);
}

std::optional<FailureRecord> StoreBackend::Impl::lost_store() {
  std::lock_guard lock(mu);
  return store_lost;
}

std::optional<FailureRecord> StoreBackend::Impl::wait_key(const std::string& k) {
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

FailureRecord StoreBackend::Impl::report_failure(int round, const FailureRecord& record) {
  const std::string k = rkey(round, "failure");
  std::string won;
  try {
    won = with_client([&](StoreClient& c) { return c.compare_set(k, "", encode(record)); });
  } catch (const std::exception&) {
    return record;  // the store is gone; the monitor reports machine 0 as lost
  }
  return read_failure(won, k);
}

void StoreBackend::Impl::beat(StoreClient& c) { c.set(my_hb_key(), std::to_string(++beats)); }

std::optional<std::string> StoreBackend::Impl::read_beat(StoreClient& c, const std::string& k) {
  if (!c.check({k})) return std::nullopt;
  return c.get(k);
}

std::optional<MalformedRecord> StoreBackend::Impl::malformed_counter(const std::string& k) const {
  try {
    StoreClient c = connect(std::min(o.heartbeat_timeout, std::chrono::milliseconds(5000)));
    if (c.check({k}))
      decode_count(c.get(k), std::numeric_limits<std::int64_t>::min(),
                   std::numeric_limits<std::int64_t>::max(), k);
  } catch (const MalformedRecord& e) {
    return e;
  } catch (const StoreError&) {
  }
  return std::nullopt;
}

StoreBackend::StoreBackend(AgentOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

StoreBackend::~StoreBackend() { stop_monitor(); }

std::string StoreBackend::key(std::string_view suffix) const { return impl_->key(suffix); }

FailureRecord StoreBackend::report_failure(int round, const FailureRecord& record) {
  return impl_->report_failure(round, record);
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

}  // namespace xlaunch::cluster
