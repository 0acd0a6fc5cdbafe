// HTTP/1.1 POSTs to one etcd member's JSON gateway (Boost.Beast), every step bounded by a
// deadline. The only OS-facing part of the etcd client.
#pragma once

#include <chrono>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "cluster/etcd_codec.hpp"

namespace xlaunch::cluster::etcd {

/// The member could not be reached or did not answer in time (connection refused, name not
/// resolved, deadline passed, connection cut): another member may still answer.
class TransportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct HttpReply {
  int status = 0;
  std::string body;
};

using Clock = std::chrono::steady_clock;

/// POSTs `body` (JSON) to `target` and reads the whole reply. Throws TransportError.
HttpReply http_post(const Endpoint& endpoint, std::string_view target, std::string_view body,
                    Clock::time_point deadline);

/// POSTs to a streaming endpoint (/v3/watch) and calls `on_line` with each newline-ended
/// message as it arrives, until `on_line` returns false (returns true) or the deadline
/// passes (returns false). Throws TransportError, and ReplyError for a status other than 200.
bool http_post_stream(const Endpoint& endpoint, std::string_view target, std::string_view body,
                      Clock::time_point deadline,
                      const std::function<bool(std::string_view)>& on_line);

}  // namespace xlaunch::cluster::etcd
