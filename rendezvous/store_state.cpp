#include "rendezvous/store_state.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <limits>
#include <map>

namespace xlaunch::rendezvous {
namespace {

// WATCH_KEY push kinds (1.13).
constexpr std::uint8_t kWatchUpdated = 0;
constexpr std::uint8_t kWatchCreated = 1;
constexpr std::uint8_t kWatchDeleted = 2;

bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

std::string printable(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 64)) {
    unsigned char u = static_cast<unsigned char>(c);
    out += (u >= 0x20 && u < 0x7f) ? std::string(1, c) : fmt::format("\\x{:02x}", u);
  }
  if (s.size() > 64) out += "...";
  return out;
}

// PyTorch's servers add with a plain int64_t `+=`, which wraps in two's complement on every
// platform they run on; unsigned arithmetic gives the same result without undefined
// behaviour (and C++20 defines the conversion back).
std::int64_t wrapping_add(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
}

}  // namespace

std::optional<std::int64_t> parse_counter(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size() && is_blank(text[i])) ++i;
  bool negative = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
  if (i >= text.size() || text[i] < '0' || text[i] > '9') return std::nullopt;
  // Accumulate negatively so INT64_MIN parses without overflow.
  std::int64_t v = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    if (__builtin_mul_overflow(v, 10, &v) || __builtin_sub_overflow(v, text[i] - '0', &v)) {
      return std::nullopt;
    }
  }
  if (!negative) {
    if (v == std::numeric_limits<std::int64_t>::min()) return std::nullopt;
    v = -v;
  }
  return v;
}

bool StoreState::exists(std::string_view key) const {
  if (kv_.find(key) != kv_.end()) return true;
  auto q = queues_.find(key);
  return q != queues_.end() && !q->second.empty();
}

std::optional<std::string> StoreState::value(std::string_view key) const {
  auto it = kv_.find(key);
  if (it == kv_.end()) return std::nullopt;
  return it->second;
}

void StoreState::notify(std::string_view key, std::uint8_t kind, std::string_view old_value,
                        std::string_view new_value, Effects& fx) {
  auto it = watchers_.find(key);
  if (it == watchers_.end()) return;
  for (ConnId conn : it->second) {
    std::string msg;
    put_u8(msg, kind);
    put_bytes(msg, key);
    put_bytes(msg, old_value);
    put_bytes(msg, new_value);
    fx.notifications.emplace_back(conn, std::move(msg));
  }
}

void StoreState::store(std::string_view key, std::string value, Effects& fx) {
  auto it = kv_.find(key);
  if (it == kv_.end()) {
    if (watchers_.find(key) != watchers_.end()) notify(key, kWatchCreated, {}, value, fx);
    kv_.emplace(std::string(key), std::move(value));
  } else {
    if (watchers_.find(key) != watchers_.end()) notify(key, kWatchUpdated, it->second, value, fx);
    it->second = std::move(value);
  }
  wake_all(key, fx);
}

void StoreState::wake_all(std::string_view key, Effects& fx) {
  auto it = parked_.find(key);
  if (it == parked_.end()) return;
  std::vector<Parked> list = std::move(it->second);
  parked_.erase(it);
  for (const Parked& p : list) {
    auto w = waits_.find(p.conn);
    if (w == waits_.end() || w->second.generation != p.generation) continue;
    if (--w->second.missing == 0) {
      fx.woken.push_back(p.conn);
      waits_.erase(w);
    }
  }
}

void StoreState::wake_one(std::string_view key, Effects& fx) {
  auto it = parked_.find(key);
  if (it == parked_.end()) return;
  std::vector<Parked>& list = it->second;
  for (std::size_t i = 0; i < list.size(); ++i) {
    auto w = waits_.find(list[i].conn);
    if (w == waits_.end() || w->second.generation != list[i].generation) continue;
    if (--w->second.missing == 0) {
      fx.woken.push_back(list[i].conn);
      waits_.erase(w);
    }
    list.erase(list.begin() + static_cast<std::ptrdiff_t>(i));
    break;
  }
  if (list.empty()) parked_.erase(it);
}

void StoreState::park(ConnId conn, const std::vector<std::string_view>& keys) {
  const std::uint64_t generation = ++next_generation_;
  std::size_t missing = 0;
  for (std::string_view k : keys) {
    if (exists(k)) continue;
    ++missing;
    auto it = parked_.find(k);
    if (it == parked_.end()) it = parked_.emplace(std::string(k), std::vector<Parked>{}).first;
    std::vector<Parked>& list = it->second;
    // Timed-out 1.13 clients re-WAIT without cancelling; drop their stale entries now and
    // then so a never-set key cannot grow its list without bound.
    if (list.size() >= 64 && (list.size() & (list.size() - 1)) == 0) {
      std::erase_if(list, [this](const Parked& p) {
        auto w = waits_.find(p.conn);
        return w == waits_.end() || w->second.generation != p.generation;
      });
    }
    list.push_back({conn, generation});
  }
  waits_[conn] = Wait{generation, missing};
}

bool StoreState::apply(ConnId conn, Dialect dialect, const Request& r, std::string& reply,
                       Effects& fx, std::string& error) {
  const bool legacy = dialect != Dialect::D2;
  switch (r.op) {
    case Op::Validate:
      return true;
    case Op::Ping:
      put_u32(reply, r.word);
      return true;
    case Op::Set:
      store(r.key, std::string(r.value), fx);
      return true;
    case Op::Get: {
      auto it = kv_.find(r.key);
      if (it != kv_.end()) {
        put_bytes(reply, it->second);
      } else if (legacy) {
        // The reference's legacy server closes here; its clients always WAIT first.
        error = fmt::format("GET of missing key \"{}\"", printable(r.key));
        return false;
      } else {
        put_bytes(reply, {});
      }
      return true;
    }
    case Op::Add: {
      std::int64_t result = r.delta;
      auto it = kv_.find(r.key);
      if (it != kv_.end()) {
        std::optional<std::int64_t> current = parse_counter(it->second);
        if (!current) {
          error = fmt::format("ADD {} to key \"{}\" whose value \"{}\" is not a 64-bit integer",
                              r.delta, printable(r.key), printable(it->second));
          return false;
        }
        result = wrapping_add(*current, r.delta);
      }
      store(r.key, std::to_string(result), fx);
      put_i64(reply, result);
      return true;
    }
    case Op::CompareSet: {
      auto it = kv_.find(r.key);
      if (it == kv_.end()) {
        if (r.expected.empty()) {
          store(r.key, std::string(r.value), fx);
          put_bytes(reply, r.value);
        } else {
          put_bytes(reply, r.expected);
        }
      } else if (it->second == r.expected) {
        store(r.key, std::string(r.value), fx);
        put_bytes(reply, r.value);
      } else {
        put_bytes(reply, it->second);
      }
      return true;
    }
    case Op::Check: {
      bool ready = std::all_of(r.keys.begin(), r.keys.end(),
                               [this](std::string_view k) { return exists(k); });
      put_u8(reply, ready ? kCheckReady : kCheckNotReady);
      return true;
    }
    case Op::Wait: {
      waits_.erase(conn);  // a new WAIT replaces an earlier one (1.13 behaviour)
      bool ready = std::all_of(r.keys.begin(), r.keys.end(),
                               [this](std::string_view k) { return exists(k); });
      if (ready) {
        put_u8(reply, kStopWaiting);
      } else {
        park(conn, r.keys);
      }
      return true;
    }
    case Op::CancelWait:
      waits_.erase(conn);
      put_u8(reply, kWaitCanceled);
      return true;
    case Op::NumKeys:
      put_i64(reply, static_cast<std::int64_t>(kv_.size()));
      return true;
    case Op::DeleteKey: {
      auto it = kv_.find(r.key);
      if (it == kv_.end()) {
        put_i64(reply, 0);
        return true;
      }
      if (watchers_.find(r.key) != watchers_.end()) {
        notify(r.key, kWatchDeleted, it->second, {}, fx);
      }
      kv_.erase(it);
      put_i64(reply, 1);
      return true;
    }
    case Op::WatchKey: {
      auto it = watchers_.find(r.key);
      if (it == watchers_.end())
        it = watchers_.emplace(std::string(r.key), std::vector<ConnId>{}).first;
      if (std::find(it->second.begin(), it->second.end(), conn) == it->second.end()) {
        it->second.push_back(conn);
        watched_[conn].emplace_back(r.key);
      }
      put_u8(reply, kWatchAck);
      return true;
    }
    case Op::Append: {
      auto it = kv_.find(r.key);
      std::string value = it == kv_.end() ? std::string() : it->second;
      value.append(r.value);
      store(r.key, std::move(value), fx);
      return true;
    }
    case Op::MultiGet: {
      std::string out;
      for (std::string_view k : r.keys) {
        auto it = kv_.find(k);
        if (it != kv_.end()) {
          put_bytes(out, it->second);
        } else if (legacy) {
          error = fmt::format("MULTI_GET of missing key \"{}\"", printable(k));
          return false;
        } else {
          put_bytes(out, {});
        }
      }
      reply += out;
      return true;
    }
    case Op::MultiSet:
      for (std::size_t i = 0; i < r.keys.size(); ++i)
        store(r.keys[i], std::string(r.values[i]), fx);
      return true;
    case Op::QueuePush: {
      auto it = queues_.find(r.key);
      if (it == queues_.end())
        it = queues_.emplace(std::string(r.key), std::deque<std::string>{}).first;
      it->second.emplace_back(r.value);
      wake_one(r.key, fx);
      return true;
    }
    case Op::QueuePop: {
      auto it = queues_.find(r.key);
      std::size_t n = it == queues_.end() ? 0 : it->second.size();
      put_i64(reply, static_cast<std::int64_t>(n));
      if (n > 0) {
        put_bytes(reply, it->second.front());
        it->second.pop_front();
        if (it->second.empty()) queues_.erase(it);
      }
      return true;
    }
    case Op::QueueLen: {
      auto it = queues_.find(r.key);
      put_i64(reply, static_cast<std::int64_t>(it == queues_.end() ? 0 : it->second.size()));
      return true;
    }
    case Op::List:
      put_i64(reply, static_cast<std::int64_t>(kv_.size()));
      for (const auto& entry : kv_) put_bytes(reply, entry.first);
      return true;
  }
  return true;
}

void StoreState::disconnect(ConnId conn) {
  waits_.erase(conn);
  auto it = watched_.find(conn);
  if (it == watched_.end()) return;
  for (const std::string& key : it->second) {
    auto w = watchers_.find(key);
    if (w == watchers_.end()) continue;
    std::erase(w->second, conn);
    if (w->second.empty()) watchers_.erase(w);
  }
  watched_.erase(it);
}

std::vector<ConnId> StoreState::clear(std::string_view keep_prefix) {
  auto kept = [&](std::string_view key) {
    return !keep_prefix.empty() && key.starts_with(keep_prefix);
  };
  // A connection parked on any key that goes is closed; one waiting only on kept keys stays.
  std::vector<ConnId> parked;
  for (const auto& [key, list] : parked_) {
    if (kept(key)) continue;
    for (const Parked& p : list) {
      auto w = waits_.find(p.conn);
      if (w != waits_.end() && w->second.generation == p.generation) parked.push_back(p.conn);
    }
  }
  std::sort(parked.begin(), parked.end());
  parked.erase(std::unique(parked.begin(), parked.end()), parked.end());
  for (ConnId conn : parked) waits_.erase(conn);
  std::erase_if(kv_, [&](const auto& entry) { return !kept(entry.first); });
  std::erase_if(queues_, [&](const auto& entry) { return !kept(entry.first); });
  std::erase_if(parked_, [&](const auto& entry) { return !kept(entry.first); });
  return parked;
}

std::vector<std::pair<ConnId, std::vector<std::string>>> StoreState::waiting() const {
  std::map<ConnId, std::vector<std::string>> by_conn;
  for (const auto& [key, list] : parked_) {
    for (const Parked& p : list) {
      auto w = waits_.find(p.conn);
      // Stale entries (a satisfied key of a wait that still misses others) are skipped.
      if (w == waits_.end() || w->second.generation != p.generation || exists(key)) continue;
      by_conn[p.conn].push_back(key);
    }
  }
  std::vector<std::pair<ConnId, std::vector<std::string>>> out;
  for (auto& [conn, keys] : by_conn) {
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    out.emplace_back(conn, std::move(keys));
  }
  return out;
}

}  // namespace xlaunch::rendezvous
