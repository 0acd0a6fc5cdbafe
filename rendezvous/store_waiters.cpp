// Who waits on what: WAITs parked until their keys exist, WATCH_KEY watchers (1.13), and
// what a set, a closed connection or a clear does to them (store_state.hpp).
#include <algorithm>
#include <map>

#include "rendezvous/store_state.hpp"

namespace xlaunch::rendezvous {

void StoreState::notify(std::string_view key, std::uint8_t kind, std::string_view old_value,
                        std::string_view new_value, Effects& fx) {
  auto it = watchers_.find(key);
  if (it == watchers_.end() || it->second.empty()) return;
  auto msg = std::make_shared<std::string>();
  put_u8(*msg, kind);
  put_bytes(*msg, key);
  put_bytes(*msg, old_value);
  put_bytes(*msg, new_value);
  const std::shared_ptr<const std::string> shared = std::move(msg);
  for (ConnId conn : it->second) fx.notifications.emplace_back(conn, shared);
}

void StoreState::key_set_for(std::unordered_map<ConnId, Wait>::iterator w, std::string_view key,
                             Effects& fx) {
  --live_entries_;
  w->second.bytes -= cost(key);
  stored_bytes_ -= cost(key);
  if (--w->second.missing == 0) {
    fx.woken.push_back(w->first);
    waits_.erase(w);
  }
}

void StoreState::wake_all(std::string_view key, Effects& fx) {
  auto it = parked_.find(key);
  if (it == parked_.end()) return;
  std::vector<Parked> list = std::move(it->second);
  parked_.erase(it);
  parked_entries_ -= list.size();
  for (const Parked& p : list) {
    auto w = waits_.find(p.conn);
    if (w == waits_.end() || w->second.generation != p.generation) continue;
    key_set_for(w, key, fx);
  }
}

void StoreState::wake_one(std::string_view key, Effects& fx) {
  auto it = parked_.find(key);
  if (it == parked_.end()) return;
  std::vector<Parked>& list = it->second;
  for (std::size_t i = 0; i < list.size(); ++i) {
    auto w = waits_.find(list[i].conn);
    if (w == waits_.end() || w->second.generation != list[i].generation) continue;
    key_set_for(w, key, fx);
    list.erase(list.begin() + static_cast<std::ptrdiff_t>(i));
    --parked_entries_;
    break;
  }
  if (list.empty()) parked_.erase(it);
}

void StoreState::park(ConnId conn, const std::vector<std::string_view>& keys) {
  const std::uint64_t generation = ++next_generation_;
  std::size_t missing = 0;
  std::size_t bytes = 0;
  for (std::string_view k : keys) {
    if (exists(k)) continue;
    ++missing;
    bytes += cost(k);
    auto it = parked_.find(k);
    if (it == parked_.end()) it = parked_.emplace(std::string(k), std::vector<Parked>{}).first;
    it->second.push_back({conn, generation});
  }
  parked_entries_ += missing;
  live_entries_ += missing;
  stored_bytes_ += bytes;
  waits_[conn] = Wait{generation, missing, bytes};
}

void StoreState::drop_wait(ConnId conn) {
  auto w = waits_.find(conn);
  if (w == waits_.end()) return;
  live_entries_ -= w->second.missing;
  stored_bytes_ -= w->second.bytes;
  waits_.erase(w);
  // Timed-out 1.13 clients re-WAIT without cancelling, and clients that close while parked
  // leave entries under keys nobody sets: swept in one pass once they outnumber the live
  // ones, so memory stays within twice what live waits hold, at constant cost per entry.
  if (parked_entries_ - live_entries_ > std::max<std::size_t>(1024, live_entries_)) {
    sweep_stale();
  }
}

void StoreState::sweep_stale() {
  for (auto it = parked_.begin(); it != parked_.end();) {
    parked_entries_ -= std::erase_if(it->second, [this](const Parked& p) {
      auto w = waits_.find(p.conn);
      return w == waits_.end() || w->second.generation != p.generation;
    });
    it = it->second.empty() ? parked_.erase(it) : std::next(it);
  }
}

void StoreState::disconnect(ConnId conn) {
  drop_wait(conn);
  auto it = watched_.find(conn);
  if (it == watched_.end()) return;
  for (const std::string& key : it->second) {
    stored_bytes_ -= watch_cost(key);
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
  for (ConnId conn : parked) {
    auto w = waits_.find(conn);
    live_entries_ -= w->second.missing;
    waits_.erase(w);
  }
  std::erase_if(kv_, [&](const auto& entry) { return !kept(entry.first); });
  std::erase_if(queues_, [&](const auto& entry) { return !kept(entry.first); });
  stored_bytes_ = 0;
  for (const auto& [key, value] : kv_) stored_bytes_ += cost(key) + value.size();
  for (const auto& [key, items] : queues_) {
    stored_bytes_ += cost(key);
    for (const std::string& item : items) stored_bytes_ += cost(item);
  }
  for (const auto& [conn, wait] : waits_) stored_bytes_ += wait.bytes;
  for (const auto& [conn, keys] : watched_) {
    for (const std::string& key : keys) stored_bytes_ += watch_cost(key);
  }
  std::erase_if(parked_, [&](const auto& entry) { return !kept(entry.first); });
  sweep_stale();  // also recounts what stays
  parked_entries_ = 0;
  for (const auto& entry : parked_) parked_entries_ += entry.second.size();
  return parked;
}

std::vector<std::pair<ConnId, std::vector<std::string>>> StoreState::waiting() const {
  std::map<ConnId, std::vector<std::string>> by_conn;
  for (const auto& [key, list] : parked_) {
    for (const Parked& p : list) {
      auto w = waits_.find(p.conn);
      // Stale entries (of waits replaced or gone) are skipped. A set key's entries went with
      // it (wake_all), so what is left is missing, and no lookup of the key is needed.
      if (w == waits_.end() || w->second.generation != p.generation) continue;
      // A few keys name what a stall waits for; copying 100,000 each second would stall it.
      std::vector<std::string>& keys = by_conn[p.conn];
      if (keys.size() < kMaxWaitingKeysReported) keys.push_back(key);
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
