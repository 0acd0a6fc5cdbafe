// Who waits on what: WAITs parked until their keys exist, WATCH_KEY watchers (1.13), and
// what a set, a closed connection or a clear does to them (store_state.hpp).
#include <algorithm>
#include <map>

#include "rendezvous/store_state.hpp"

namespace xlaunch::rendezvous {

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
