// A blocking etcd v3 client over the HTTP/JSON gateway: what the etcd join backend needs
// (ranges, puts, create-if-absent transactions, leases, watches), each call bounded in time.
// Several endpoints (members of one cluster) may be given: a call goes to the member that
// last answered and moves on to the next when a member cannot be reached or is unavailable.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/etcd_codec.hpp"

namespace xlaunch::cluster::etcd {

/// A call that failed: `unreachable` when no member could be reached or none answered in
/// time (a retry may help), else etcd refused the request or answered nonsense.
class Error : public std::runtime_error {
 public:
  Error(const std::string& what, bool unreachable)
      : std::runtime_error(what), unreachable_(unreachable) {}
  bool unreachable() const { return unreachable_; }

 private:
  bool unreachable_;
};

/// Events of one watch call; `next_revision` is where the following watch should start.
struct WatchResult {
  std::vector<WatchEvent> events;
  std::int64_t next_revision = 0;
};

class Client {
 public:
  /// `request_timeout` bounds each attempt on one member (connect, send, reply).
  explicit Client(std::vector<Endpoint> endpoints,
                  std::chrono::milliseconds request_timeout = std::chrono::seconds(5));

  RangeResult get(std::string_view key);
  RangeResult get_prefix(std::string_view prefix);
  /// Returns the store's revision after the put.
  std::int64_t put(std::string_view key, std::string_view value, std::int64_t lease = 0);
  /// Puts only when the key does not exist (one transaction); else returns the current value.
  CreateResult create(std::string_view key, std::string_view value, std::int64_t lease = 0);
  std::int64_t erase_prefix(std::string_view prefix);

  LeaseGrant grant_lease(std::int64_t ttl_seconds);
  /// Renews the lease once; returns its new TTL, 0 when the lease has expired or was revoked.
  std::int64_t keep_alive(std::int64_t lease);
  void revoke(std::int64_t lease);

  /// Waits up to `timeout` for changes under `prefix` at or after `start_revision`
  /// (0: from now); returns as soon as some arrived (none: the timeout passed).
  WatchResult watch(std::string_view prefix, std::int64_t start_revision,
                    std::chrono::milliseconds timeout);

  /// "host:port,host:port" for messages.
  std::string endpoints_text() const;

 private:
  std::string call(std::string_view target, std::string_view body);

  std::vector<Endpoint> endpoints_;
  std::chrono::milliseconds request_timeout_;
  std::atomic<std::size_t> current_{0};  // the member that answered last
};

}  // namespace xlaunch::cluster::etcd
