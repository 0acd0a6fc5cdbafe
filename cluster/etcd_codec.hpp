// etcd's v3 API as spoken through its HTTP/JSON gateway: request bodies and reply parses.
// Pure (no sockets): keys and values travel base64-encoded, 64-bit integers as JSON strings,
// and fields equal to their default (false, 0, PUT) are left out by the gateway.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace xlaunch::cluster::etcd {

/// One etcd member's client address.
struct Endpoint {
  std::string host;
  std::uint16_t port = 2379;
  std::string text() const;  ///< "host:port"
};

/// "host[:port][,host[:port]...]", an optional "http://" before each (port 2379 when left
/// out). Throws std::invalid_argument naming the bad entry (https is not supported).
std::vector<Endpoint> parse_endpoints(std::string_view text);

std::string base64_encode(std::string_view bytes);
/// nullopt for text that is not standard padded base64.
std::optional<std::string> base64_decode(std::string_view text);

/// The range_end that selects every key starting with `prefix` (etcd's convention: the
/// prefix with its last byte below 0xff incremented; "\0" for an empty prefix).
std::string prefix_end(std::string_view prefix);

/// A reply etcd sent that is not what the API promises, or an error etcd reported.
class ReplyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct KeyValue {
  std::string key;
  std::string value;
  std::int64_t create_revision = 0;
  std::int64_t mod_revision = 0;
  std::int64_t lease = 0;
};

struct RangeResult {
  std::int64_t revision = 0;  ///< the store's revision when it answered
  std::vector<KeyValue> kvs;
};

/// Result of a create (put only if the key does not exist).
struct CreateResult {
  bool created = false;
  std::int64_t revision = 0;
  std::optional<KeyValue> existing;  ///< the key's current value when not created
};

struct LeaseGrant {
  std::int64_t id = 0;
  std::int64_t ttl = 0;  ///< seconds
};

struct WatchEvent {
  bool deleted = false;  ///< DELETE (a lease's expiry deletes its keys); else PUT
  KeyValue kv;
};

/// One message of a watch stream.
struct WatchMessage {
  std::int64_t revision = 0;
  bool created = false;
  bool canceled = false;
  std::int64_t compact_revision = 0;  ///< set when start_revision was compacted away
  std::string cancel_reason;
  std::vector<WatchEvent> events;
};

// Request bodies (POST to the path named beside each).
std::string range_request(std::string_view key, bool prefix);  ///< /v3/kv/range
std::string put_request(std::string_view key, std::string_view value,
                        std::int64_t lease);                    ///< /v3/kv/put
std::string delete_request(std::string_view key, bool prefix);  ///< /v3/kv/deleterange
/// /v3/kv/txn: if create_revision(key) == 0 then put(key, value, lease) else range(key).
std::string create_request(std::string_view key, std::string_view value, std::int64_t lease);
std::string lease_grant_request(std::int64_t ttl_seconds);  ///< /v3/lease/grant
std::string lease_id_request(std::int64_t id);  ///< /v3/lease/keepalive, /v3/lease/revoke
/// /v3/watch: events of keys under `prefix` from `start_revision` (0: from now on).
std::string watch_request(std::string_view prefix, std::int64_t start_revision);

// Reply parses: throw ReplyError for JSON that is not the expected reply (with the text
// etcd sent for an error reply).
RangeResult decode_range(std::string_view body);
std::int64_t decode_revision(std::string_view body);  ///< put, deleterange, revoke
CreateResult decode_create(std::string_view body);
LeaseGrant decode_lease_grant(std::string_view body);
/// The TTL the keepalive renewed to; 0 means the lease no longer exists.
std::int64_t decode_keepalive(std::string_view body);
/// One line of a watch stream.
WatchMessage decode_watch(std::string_view line);

/// What an error reply (HTTP status not 200) says, for messages: etcd's "error"/"message"
/// text when the body is JSON, else the body cut to 200 bytes.
std::string error_text(std::string_view body);

}  // namespace xlaunch::cluster::etcd
