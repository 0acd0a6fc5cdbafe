// The store server's requests: each complete one goes to the StoreState, and what it
// causes elsewhere (woken waits, watch pushes) reaches the other connections
// (server_core.hpp).
#include <fmt/core.h>

#include "rendezvous/server_core.hpp"

namespace xlaunch::rendezvous {

// Handles every complete request at the front of `data`; `used` = the bytes they took.
bool ServerCore::process(Connection& c, std::span<const std::uint8_t> data, std::size_t& used) {
  std::string error;
  c.backlog = false;
  while (data.size() - used >= c.need) {
    if (c.unsent() > kMaxQueuedOutput) {
      c.backlog = true;  // the rest waits until the client reads (ServerCore::serve)
      break;
    }
    // SamePrefix holds: after a NeedMore, `partial` keeps exactly the bytes decoded then and
    // only appends to them until the request completes (ServerCore::serve), so a trickled
    // list request is read once, not again on every arrival.
    DecodeResult res = c.decoder.decode(data.subspan(used), request, Resume::SamePrefix);
    if (res.status == DecodeStatus::NeedMore) {
      c.need = res.size;
      break;
    }
    if (res.status == DecodeStatus::Malformed) {
      close(c, c.decoder.error());
      return false;
    }
    c.need = 1;
    Effects fx;
    if (!state.apply(c.id, c.decoder.dialect(), request, c.out, fx, error)) {
      close(c, error);
      return false;
    }
    used += res.size;
    ++c.requests;
    if (!fx.woken.empty() || !fx.notifications.empty()) deliver(fx, c.id);
  }
  return true;
}

void ServerCore::deliver(const Effects& fx, ConnId self) {
  const char stop = static_cast<char>(kStopWaiting);
  for (ConnId id : fx.woken) {
    auto it = conns.find(id);
    if (it == conns.end()) continue;
    it->second.out.push_back(stop);
    if (id != self) flush(it->second);
  }
  for (const auto& [id, bytes] : fx.notifications) {
    auto it = conns.find(id);
    if (it == conns.end()) continue;
    Connection& watcher = it->second;
    if (id != self && watcher.unsent() > kMaxQueuedOutput) {
      // Its own requests pause at this bound; pushes would not: a watcher that never reads
      // would hold every value ever written to its keys.
      close(watcher, fmt::format("{} bytes of WATCH_KEY notifications wait for it to read them",
                                 watcher.unsent()));
      continue;
    }
    watcher.out += *bytes;
    // Within the budget of unsent output of all connections, as replies are: a large value
    // set under many watchers that do not read must not grow the store without bound.
    if (id != self && flush(watcher)) account_queued_others(self);
  }
}

void ServerCore::update_counters() {
  num_keys.store(state.num_keys(), std::memory_order_relaxed);
  num_parked.store(state.num_parked(), std::memory_order_relaxed);
}

void ServerCore::clear_now(std::string_view keep_prefix) {
  for (ConnId id : state.clear(keep_prefix)) {
    auto it = conns.find(id);
    if (it != conns.end()) close(it->second, {});
  }
  update_counters();
}

}  // namespace xlaunch::rendezvous
