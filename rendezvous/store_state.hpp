// The store's data and its parked waiters, with the semantics of every request
// (tcpstore-protocol.md §4). Pure: no sockets, no threads; the server owns one instance on
// its event loop, and tests drive it directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "rendezvous/dialect.hpp"
#include "rendezvous/wire_codec.hpp"

namespace xlaunch::rendezvous {

/// Identifies a client connection; chosen by the server, never reused.
using ConnId = std::uint64_t;

/// What a request did to connections other than the one that sent it.
struct Effects {
  /// Parked WAITs that are now satisfied: send each of them one STOP_WAITING byte.
  std::vector<ConnId> woken;
  /// WATCH_KEY pushes (1.13): bytes to append to that connection's output.
  /// One message per change, shared by every watcher of the key: a large value is not
  /// copied once per watcher before it is sent.
  std::vector<std::pair<ConnId, std::shared_ptr<const std::string>>> notifications;
};

/// What one client may make the state hold or send at once.
struct StateLimits {
  /// A value, also after APPENDs (SET's own is checked by the decoder).
  std::size_t max_value_bytes = SIZE_MAX;
  /// One reply: a MULTI_GET or LIST naming much must not build gigabytes.
  std::size_t max_reply_bytes = SIZE_MAX;
  /// Keys, values, queued items, the keys parked WAITs name and watched keys (1.13's
  /// WATCH_KEY), all together (kEntryOverhead more for each).
  std::size_t max_stored_bytes = SIZE_MAX;
};

/// Counted for each key and each queued item beyond its bytes, for the store's bookkeeping:
/// a million empty keys are not free either.
inline constexpr std::size_t kEntryOverhead = 64;

/// Keys reported per parked connection by waiting(): enough to name what a stall waits for.
inline constexpr std::size_t kMaxWaitingKeysReported = 16;

class StoreState {
 public:
  explicit StoreState(StateLimits limits = {}) : limits_(limits) {}

  /// Applies `request` from `conn`, speaking `dialect` (decides GET-of-missing-key), and
  /// appends the reply bytes to `reply`. Returns false when the request must close the
  /// connection (ADD on a non-integer, GET of a missing key on a legacy connection, a value
  /// past a limit);
  /// `error` then says why and nothing was changed.
  bool apply(ConnId conn, Dialect dialect, const Request& request, std::string& reply,
             Effects& effects, std::string& error);

  /// Forgets everything that belongs to a closed connection (its wait, its watches).
  void disconnect(ConnId conn);

  /// Empties keys and queues and drops every parked wait; returns the connections that
  /// were parked (the server closes them so their clients fail instead of hanging).
  /// Keys and queues starting with `keep_prefix` (when not empty) stay, and so do waits
  /// that only wait on such keys: an elastic job's launchers keep their own records while
  /// the workers' keys go, as each round's workers expect an empty store (PyTorch 2.x).
  std::vector<ConnId> clear(std::string_view keep_prefix = {});

  std::size_t num_keys() const { return kv_.size(); }
  /// What StateLimits::max_stored_bytes bounds.
  std::size_t stored_bytes() const { return stored_bytes_; }
  std::size_t num_parked() const { return waits_.size(); }
  /// Entries under parked_'s keys, stale ones included (for tests: they stay bounded).
  std::size_t num_parked_entries() const { return parked_entries_; }
  /// Each connection parked in a WAIT with keys it still waits for (sorted; at most
  /// kMaxWaitingKeysReported of them), for the launcher's stall report.
  std::vector<std::pair<ConnId, std::vector<std::string>>> waiting() const;
  /// The value of `key`, for tests and diagnostics.
  std::optional<std::string> value(std::string_view key) const;

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  template <class T>
  using Map = std::unordered_map<std::string, T, Hash, std::equal_to<>>;

  struct Wait {
    std::uint64_t generation;
    std::size_t missing;  // keys not set yet; also its entries in parked_
    std::size_t bytes;    // what those entries count toward max_stored_bytes
  };
  struct Parked {
    ConnId conn;
    std::uint64_t generation;  // stale entries (cancelled/replaced waits) are skipped
  };

  bool exists(std::string_view key) const;
  bool all_exist(const std::vector<std::string_view>& keys) const;
  // Sets `key`, telling its watchers and waking its waits.
  void store(std::string_view key, std::string value, Effects& fx);
  // Whether the store may hold `added` bytes more once `freed` go; else `error` says so.
  bool room_for(std::size_t freed, std::size_t added, std::string_view request,
                std::string_view key, std::string& error) const;
  // store() when the new value fits in max_stored_bytes; false with `error` when not.
  bool store_within_limit(std::string_view key, std::string value, std::string_view request,
                          Effects& fx, std::string& error);
  bool multi_set(const Request& r, Effects& fx, std::string& error);
  // Requests (apply): false closes the connection, `error` says why.
  bool get(std::string_view key, bool legacy, std::string& reply, std::string& error);
  bool add(std::string_view key, std::int64_t delta, std::string& reply, Effects& fx,
           std::string& error);
  bool compare_set(const Request& r, std::string& reply, Effects& fx, std::string& error);
  bool wait(ConnId conn, const std::vector<std::string_view>& keys, std::string& reply,
            std::string& error);
  void delete_key(std::string_view key, std::string& reply, Effects& fx);
  bool watch_key(ConnId conn, std::string_view key, std::string& reply, std::string& error);
  // A watch keeps its key twice: by key, and by connection.
  static std::size_t watch_cost(std::string_view key) { return key.size() + cost(key); }
  // What one key, value or queued item counts toward max_stored_bytes, its bookkeeping included.
  static std::size_t cost(std::string_view bytes) { return bytes.size() + kEntryOverhead; }
  bool multi_get(const std::vector<std::string_view>& keys, bool legacy, std::string& reply,
                 std::string& error);
  bool queue_push(std::string_view key, std::string_view value, Effects& fx, std::string& error);
  void queue_pop(std::string_view key, std::string& reply);
  // Waiters (store_waiters.cpp).
  void wake_all(std::string_view key, Effects& fx);
  void wake_one(std::string_view key, Effects& fx);
  void notify(std::string_view key, std::uint8_t kind, std::string_view old_value,
              std::string_view new_value, Effects& fx);
  void park(ConnId conn, const std::vector<std::string_view>& keys);
  // One of the keys wait `w` waits for is set: its entry goes, and the wait ends if it was
  // the last.
  void key_set_for(std::unordered_map<ConnId, Wait>::iterator w, std::string_view key, Effects& fx);
  // Ends `conn`'s wait without waking it (replaced, cancelled, disconnected); its entries in
  // parked_ become stale and are swept once they outnumber the live ones.
  void drop_wait(ConnId conn);
  void sweep_stale();
  bool append(std::string_view key, std::string_view tail, Effects& fx, std::string& error);

  StateLimits limits_;
  // kv_'s, queues_', live waits' and watches' bytes, kEntryOverhead each included.
  std::size_t stored_bytes_ = 0;
  Map<std::string> kv_;
  Map<std::deque<std::string>> queues_;
  Map<std::vector<Parked>> parked_;
  std::unordered_map<ConnId, Wait> waits_;
  std::uint64_t next_generation_ = 0;
  std::size_t parked_entries_ = 0;  // in all of parked_'s lists, stale ones included
  std::size_t live_entries_ = 0;    // the sum of waits_' missing
  Map<std::vector<ConnId>> watchers_;
  std::unordered_map<ConnId, std::vector<std::string>> watched_;
};

/// Parses a stored counter like C's strtoll: leading blanks, optional sign, at least one
/// digit, trailing bytes ignored. nullopt when there is no number or it overflows.
std::optional<std::int64_t> parse_counter(std::string_view text);

}  // namespace xlaunch::rendezvous
