// The store's bound on bytes of unfinished requests across all connections: how many each
// connection holds, their total, and which holds the most. Pure; no I/O.
#pragma once

#include <cstddef>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>

#include "rendezvous/store_state.hpp"

namespace xlaunch::rendezvous {

class PendingBudget {
 public:
  explicit PendingBudget(std::size_t cap) : cap_(cap) {}

  /// Records that `conn` now holds `bytes` of unfinished requests (0: none).
  void set(ConnId conn, std::size_t bytes);
  /// Forgets a closed connection.
  void forget(ConnId conn) { set(conn, 0); }

  std::size_t cap() const { return cap_; }
  std::size_t total() const { return total_; }
  bool exceeded() const { return total_ > cap_; }

  struct Holder {
    ConnId conn;
    std::size_t bytes;
  };
  /// The connection that holds the most bytes (the newest among equals); none when no
  /// connection holds any.
  std::optional<Holder> largest() const;

 private:
  std::size_t cap_;
  std::size_t total_ = 0;
  std::unordered_map<ConnId, std::size_t> held_;  // only connections that hold bytes
  std::set<std::pair<std::size_t, ConnId>> by_size_;
};

}  // namespace xlaunch::rendezvous
