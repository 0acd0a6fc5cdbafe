#include "rendezvous/store_state.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <limits>

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

void StoreState::store(std::string_view key, std::string value, Effects& fx) {
  auto it = kv_.find(key);
  if (it == kv_.end()) {
    if (watchers_.find(key) != watchers_.end()) notify(key, kWatchCreated, {}, value, fx);
    stored_bytes_ += cost(key) + value.size();
    kv_.emplace(std::string(key), std::move(value));
  } else {
    if (watchers_.find(key) != watchers_.end()) notify(key, kWatchUpdated, it->second, value, fx);
    stored_bytes_ = stored_bytes_ - it->second.size() + value.size();
    it->second = std::move(value);
  }
  wake_all(key, fx);
}

bool StoreState::room_for(std::size_t freed, std::size_t added, std::string_view request,
                          std::string_view key, std::string& error) const {
  const std::size_t after = stored_bytes_ - std::min(freed, stored_bytes_);
  if (added <= limits_.max_stored_bytes && after <= limits_.max_stored_bytes - added) return true;
  error = fmt::format(
      "{} of key \"{}\" would make the store hold {} bytes, over its limit of {} "
      "(max_stored_bytes)",
      request, printable(key), after + added, limits_.max_stored_bytes);
  return false;
}

bool StoreState::store_within_limit(std::string_view key, std::string value,
                                    std::string_view request, Effects& fx, std::string& error) {
  auto it = kv_.find(key);
  const std::size_t freed = it == kv_.end() ? 0 : it->second.size();
  const std::size_t added = value.size() + (it == kv_.end() ? cost(key) : 0);
  if (!room_for(freed, added, request, key, error)) return false;
  store(key, std::move(value), fx);
  return true;
}

bool StoreState::multi_set(const Request& r, Effects& fx, std::string& error) {
  // All or nothing: the whole request is measured before any key is set.
  Map<std::size_t> sizes;  // each key's value as the request leaves it
  for (std::size_t i = 0; i < r.keys.size(); ++i)
    sizes[std::string(r.keys[i])] = r.values[i].size();
  std::size_t freed = 0, added = 0;
  for (const auto& [key, size] : sizes) {
    auto it = kv_.find(key);
    freed += it == kv_.end() ? 0 : it->second.size();
    added += size + (it == kv_.end() ? cost(key) : 0);
  }
  if (!r.keys.empty() && !room_for(freed, added, "MULTI_SET", r.keys.front(), error)) return false;
  for (std::size_t i = 0; i < r.keys.size(); ++i) store(r.keys[i], std::string(r.values[i]), fx);
  return true;
}

// One case per request; those that need more than a few lines have a function below.
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
      return store_within_limit(r.key, std::string(r.value), "SET", fx, error);
    case Op::Get:
      return get(r.key, legacy, reply, error);
    case Op::Add:
      return add(r.key, r.delta, reply, fx, error);
    case Op::CompareSet:
      return compare_set(r, reply, fx, error);
    case Op::Check:
      put_u8(reply, all_exist(r.keys) ? kCheckReady : kCheckNotReady);
      return true;
    case Op::Wait:
      return wait(conn, r.keys, reply, error);
    case Op::CancelWait:
      drop_wait(conn);
      put_u8(reply, kWaitCanceled);
      return true;
    case Op::NumKeys:
      put_i64(reply, static_cast<std::int64_t>(kv_.size()));
      return true;
    case Op::DeleteKey:
      delete_key(r.key, reply, fx);
      return true;
    case Op::WatchKey:
      return watch_key(conn, r.key, reply, error);
    case Op::Append:
      return append(r.key, r.value, fx, error);
    case Op::MultiGet:
      return multi_get(r.keys, legacy, reply, error);
    case Op::MultiSet:
      return multi_set(r, fx, error);
    case Op::QueuePush:
      return queue_push(r.key, r.value, fx, error);
    case Op::QueuePop:
      queue_pop(r.key, reply);
      return true;
    case Op::QueueLen: {
      auto it = queues_.find(r.key);
      put_i64(reply, static_cast<std::int64_t>(it == queues_.end() ? 0 : it->second.size()));
      return true;
    }
    case Op::List: {
      std::size_t bytes = 8;
      for (const auto& entry : kv_) bytes += 8 + entry.first.size();
      if (bytes > limits_.max_reply_bytes) {
        error = fmt::format("LIST's reply would be {} bytes, over the store's limit of {}", bytes,
                            limits_.max_reply_bytes);
        return false;
      }
      put_i64(reply, static_cast<std::int64_t>(kv_.size()));
      for (const auto& entry : kv_) put_bytes(reply, entry.first);
      return true;
    }
  }
  return true;
}

bool StoreState::append(std::string_view key, std::string_view tail, Effects& fx,
                        std::string& error) {
  auto it = kv_.find(key);
  const std::size_t before = it == kv_.end() ? 0 : it->second.size();
  // Each APPEND is within the value limit; without this, many would grow one value forever.
  if (tail.size() > limits_.max_value_bytes - std::min(before, limits_.max_value_bytes)) {
    error = fmt::format(
        "APPEND to key \"{}\" would make its value {} bytes, over the store's "
        "limit of {}",
        printable(key), before + tail.size(), limits_.max_value_bytes);
    return false;
  }
  std::string value = it == kv_.end() ? std::string() : it->second;
  value.append(tail);
  return store_within_limit(key, std::move(value), "APPEND", fx, error);
}

bool StoreState::all_exist(const std::vector<std::string_view>& keys) const {
  return std::all_of(keys.begin(), keys.end(), [this](std::string_view k) { return exists(k); });
}

bool StoreState::get(std::string_view key, bool legacy, std::string& reply, std::string& error) {
  auto it = kv_.find(key);
  if (it != kv_.end()) {
    put_bytes(reply, it->second);
  } else if (legacy) {
    // The reference's legacy server closes here; its clients always WAIT first.
    error = fmt::format("GET of missing key \"{}\"", printable(key));
    return false;
  } else {
    put_bytes(reply, {});
  }
  return true;
}

bool StoreState::add(std::string_view key, std::int64_t delta, std::string& reply, Effects& fx,
                     std::string& error) {
  std::int64_t result = delta;
  auto it = kv_.find(key);
  if (it != kv_.end()) {
    std::optional<std::int64_t> current = parse_counter(it->second);
    if (!current) {
      error = fmt::format("ADD {} to key \"{}\" whose value \"{}\" is not a 64-bit integer", delta,
                          printable(key), printable(it->second));
      return false;
    }
    result = wrapping_add(*current, delta);
  }
  if (!store_within_limit(key, std::to_string(result), "ADD", fx, error)) return false;
  put_i64(reply, result);
  return true;
}

bool StoreState::compare_set(const Request& r, std::string& reply, Effects& fx,
                             std::string& error) {
  auto it = kv_.find(r.key);
  const bool sets = it == kv_.end() ? r.expected.empty() : it->second == r.expected;
  if (!sets) {
    put_bytes(reply, it == kv_.end() ? r.expected : std::string_view(it->second));
    return true;
  }
  if (!store_within_limit(r.key, std::string(r.value), "COMPARE_SET", fx, error)) return false;
  put_bytes(reply, r.value);
  return true;
}

bool StoreState::wait(ConnId conn, const std::vector<std::string_view>& keys, std::string& reply,
                      std::string& error) {
  drop_wait(conn);  // a new WAIT replaces an earlier one (1.13 behaviour)
  std::size_t added = 0;
  std::string_view first_missing;
  for (std::string_view k : keys) {
    if (exists(k)) continue;
    if (added == 0) first_missing = k;
    added += cost(k);
  }
  if (added == 0) {
    put_u8(reply, kStopWaiting);
    return true;
  }
  // Parked, each key it names is an entry the store keeps until the key is set.
  if (!room_for(0, added, "WAIT", first_missing, error)) return false;
  park(conn, keys);
  return true;
}

void StoreState::delete_key(std::string_view key, std::string& reply, Effects& fx) {
  auto it = kv_.find(key);
  if (it == kv_.end()) {
    put_i64(reply, 0);
    return;
  }
  if (watchers_.find(key) != watchers_.end()) notify(key, kWatchDeleted, it->second, {}, fx);
  stored_bytes_ -= cost(key) + it->second.size();
  kv_.erase(it);
  put_i64(reply, 1);
}

bool StoreState::watch_key(ConnId conn, std::string_view key, std::string& reply,
                           std::string& error) {
  auto it = watchers_.find(key);
  const bool watching = it != watchers_.end() &&
                        std::find(it->second.begin(), it->second.end(), conn) != it->second.end();
  if (!watching) {
    if (!room_for(0, watch_cost(key), "WATCH_KEY", key, error)) return false;
    if (it == watchers_.end())
      it = watchers_.emplace(std::string(key), std::vector<ConnId>{}).first;
    it->second.push_back(conn);
    watched_[conn].emplace_back(key);
    stored_bytes_ += watch_cost(key);
  }
  put_u8(reply, kWatchAck);
  return true;
}

bool StoreState::multi_get(const std::vector<std::string_view>& keys, bool legacy,
                           std::string& reply, std::string& error) {
  // Sized first: naming one large value many times must not build the reply to find out.
  std::size_t bytes = 0;
  for (std::string_view k : keys) {
    auto it = kv_.find(k);
    bytes += 8 + (it == kv_.end() ? 0 : it->second.size());
    if (bytes > limits_.max_reply_bytes) {
      error = fmt::format("MULTI_GET's reply would be over the store's limit of {} bytes",
                          limits_.max_reply_bytes);
      return false;
    }
  }
  std::string out;
  out.reserve(bytes);
  for (std::string_view k : keys) {
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

bool StoreState::queue_push(std::string_view key, std::string_view value, Effects& fx,
                            std::string& error) {
  auto it = queues_.find(key);
  const std::size_t added = cost(value) + (it == queues_.end() ? cost(key) : 0);
  if (!room_for(0, added, "QUEUE_PUSH", key, error)) return false;
  stored_bytes_ += added;
  if (it == queues_.end()) it = queues_.emplace(std::string(key), std::deque<std::string>{}).first;
  it->second.emplace_back(value);
  wake_one(key, fx);
  return true;
}

void StoreState::queue_pop(std::string_view key, std::string& reply) {
  auto it = queues_.find(key);
  std::size_t n = it == queues_.end() ? 0 : it->second.size();
  put_i64(reply, static_cast<std::int64_t>(n));
  if (n > 0) {
    put_bytes(reply, it->second.front());
    stored_bytes_ -= cost(it->second.front());
    it->second.pop_front();
    if (it->second.empty()) {
      stored_bytes_ -= cost(key);
      queues_.erase(it);
    }
  }
}

}  // namespace xlaunch::rendezvous
