#include "cluster/etcd_client.hpp"

#include <algorithm>
#include <thread>

#include "cluster/etcd_http.hpp"

namespace xlaunch::cluster::etcd {

Client::Client(std::vector<Endpoint> endpoints, std::chrono::milliseconds request_timeout)
    : endpoints_(std::move(endpoints)), request_timeout_(request_timeout) {
  if (endpoints_.empty()) throw std::invalid_argument("etcd client: no endpoint");
}

std::string Client::endpoints_text() const {
  std::string out;
  for (const auto& e : endpoints_) out += (out.empty() ? "" : ",") + e.text();
  return out;
}

std::string Client::call(std::string_view target, std::string_view body) {
  std::string problems;
  const std::size_t first = current_.load();
  for (std::size_t i = 0; i < endpoints_.size(); ++i) {
    const std::size_t index = (first + i) % endpoints_.size();
    const Endpoint& endpoint = endpoints_[index];
    try {
      HttpReply reply = http_post(endpoint, target, body, Clock::now() + request_timeout_);
      if (reply.status == 200) {
        current_.store(index);
        return std::move(reply.body);
      }
      std::string text = "HTTP " + std::to_string(reply.status) + ": " + error_text(reply.body);
      // 5xx: this member cannot serve now (no leader, shutting down); another may.
      if (reply.status < 500)
        throw Error("etcd at " + endpoint.text() + " refused " + std::string(target) + ": " + text,
                    false);
      problems += (problems.empty() ? "" : "; ") + endpoint.text() + ": " + text;
    } catch (const TransportError& e) {
      problems += (problems.empty() ? "" : "; ") + endpoint.text() + ": " + e.what();
    }
  }
  throw Error("cannot reach etcd at " + endpoints_text() + " (" + problems + ")", true);
}

namespace {
template <typename F>
auto decoded(F&& decode, std::string_view target, const std::string& body) {
  try {
    return decode(body);
  } catch (const ReplyError& e) {
    throw Error(std::string(target) + ": " + e.what(), false);
  }
}
}  // namespace

RangeResult Client::get(std::string_view key) {
  return decoded(decode_range, "/v3/kv/range", call("/v3/kv/range", range_request(key, false)));
}

RangeResult Client::get_prefix(std::string_view prefix) {
  return decoded(decode_range, "/v3/kv/range", call("/v3/kv/range", range_request(prefix, true)));
}

std::int64_t Client::put(std::string_view key, std::string_view value, std::int64_t lease) {
  return decoded(decode_revision, "/v3/kv/put", call("/v3/kv/put", put_request(key, value, lease)));
}

CreateResult Client::create(std::string_view key, std::string_view value, std::int64_t lease) {
  return decoded(decode_create, "/v3/kv/txn",
                 call("/v3/kv/txn", create_request(key, value, lease)));
}

std::int64_t Client::erase_prefix(std::string_view prefix) {
  return decoded(decode_revision, "/v3/kv/deleterange",
                 call("/v3/kv/deleterange", delete_request(prefix, true)));
}

LeaseGrant Client::grant_lease(std::int64_t ttl_seconds) {
  return decoded(decode_lease_grant, "/v3/lease/grant",
                 call("/v3/lease/grant", lease_grant_request(ttl_seconds)));
}

std::int64_t Client::keep_alive(std::int64_t lease) {
  return decoded(decode_keepalive, "/v3/lease/keepalive",
                 call("/v3/lease/keepalive", lease_id_request(lease)));
}

void Client::revoke(std::int64_t lease) {
  try {
    call("/v3/lease/revoke", lease_id_request(lease));
  } catch (const Error& e) {
    // Revoking a lease that already expired is done, not an error.
    if (std::string(e.what()).find("lease not found") == std::string::npos) throw;
  }
}

WatchResult Client::watch(std::string_view prefix, std::int64_t start_revision,
                          std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  const std::string body = watch_request(prefix, start_revision);
  WatchResult out;
  out.next_revision = start_revision;
  const auto handle = [&](std::string_view line) {
    WatchMessage message = decode_watch(line);
    if (message.canceled) {
      throw Error("etcd canceled the watch of " + std::string(prefix) + ": " +
                      (message.compact_revision > 0
                           ? "revision " + std::to_string(start_revision) + " was compacted"
                           : message.cancel_reason),
                  false);
    }
    if (message.events.empty()) {  // the "created" message: no change yet
      if (out.next_revision == 0 && message.revision > 0) out.next_revision = message.revision + 1;
      return true;
    }
    for (auto& event : message.events) {
      out.next_revision = std::max(out.next_revision, event.kv.mod_revision + 1);
      out.events.push_back(std::move(event));
    }
    return false;
  };
  std::string problems;
  const std::size_t first = current_.load();
  // A member that cannot be reached or breaks the stream is left for the next one, until
  // the deadline; a pause after each pass over all members keeps this from spinning.
  for (std::size_t attempt = 0;; ++attempt) {
    const std::size_t index = (first + attempt) % endpoints_.size();
    const Endpoint& endpoint = endpoints_[index];
    if (index == first) problems.clear();
    try {
      http_post_stream(endpoint, "/v3/watch", body, deadline, handle);
      current_.store(index);
      return out;
    } catch (const TransportError& e) {
      problems += (problems.empty() ? "" : "; ") + endpoint.text() + ": " + e.what();
    } catch (const ReplyError& e) {
      throw Error("/v3/watch at " + endpoint.text() + ": " + e.what(), false);
    }
    const auto now = Clock::now();
    if (now >= deadline) break;
    if ((attempt + 1) % endpoints_.size() == 0)
      std::this_thread::sleep_for(
          std::min<Clock::duration>(std::chrono::milliseconds(200), deadline - now));
  }
  throw Error("cannot reach etcd at " + endpoints_text() + " (" + problems + ")", true);
}

}  // namespace xlaunch::cluster::etcd
