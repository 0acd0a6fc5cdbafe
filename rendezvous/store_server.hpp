// The store server: one event loop on its own thread owns the key-value map; blocking
// requests (WAIT) are parked by key, never a thread per client. Speaks every TCPStore
// generation (1.13, 2.1, 2.2+) on the same port.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xlaunch::rendezvous {

/// How legacy (no-handshake) connections read the ambiguous codes 7 and 8.
enum class LegacyDialect { Torch113, Torch21 };

struct ServerLimits {
  std::size_t max_key_bytes = 64 * 1024;
  std::size_t max_value_bytes = 64 * 1024 * 1024;
  std::size_t max_keys_per_request = 131072;
  std::size_t max_connections = 65536;
  /// Bound on one whole request (many long keys in one KeyList would be unbounded). Never
  /// more than max_buffered_bytes: a larger request could not arrive whole.
  std::size_t max_request_bytes = 256 * 1024 * 1024;
  /// Bound on the bytes of unfinished requests buffered across all connections. Past it,
  /// the connection that buffers the most is closed (and again, until the total fits).
  std::size_t max_buffered_bytes = 256 * 1024 * 1024;
  /// Bound on what the store holds: keys, values and queued items, all together. A request
  /// that would pass it closes its connection and changes nothing.
  std::size_t max_stored_bytes = std::size_t{1} << 30;
};

struct ServerOptions {
  ServerLimits limits;
  LegacyDialect legacy_dialect = LegacyDialect::Torch113;
  /// Log lines (connection dropped, limits hit) go to stderr with this prefix.
  std::string log_prefix = "xlaunch store";
  /// Where log lines go instead of stderr (one line, with its newline), called on the store's
  /// thread: a launcher passes its console, which never blocks.
  std::function<void(std::string_view)> log_sink;
};

/// A bound, listening TCP socket. Choosing port 0 binds a free port, and this very
/// socket is later served, so nothing can take the port in between.
class ListeningSocket {
 public:
  /// Binds host:port and listens (SOMAXCONN backlog). host "" or "::" means all
  /// interfaces (dual-stack, falling back to 0.0.0.0). Throws StoreError naming the address;
  /// AddressInUse (a StoreError) when the port is taken there.
  static ListeningSocket bind(const std::string& host, std::uint16_t port);

  ListeningSocket(ListeningSocket&&) noexcept;
  ListeningSocket& operator=(ListeningSocket&&) noexcept;
  ~ListeningSocket();

  std::uint16_t port() const { return port_; }
  /// Gives up ownership of the file descriptor.
  int release();

 private:
  ListeningSocket(int fd, std::uint16_t port) : fd_(fd), port_(port) {}
  int fd_ = -1;
  std::uint16_t port_ = 0;
};

class StoreServer {
 public:
  /// Takes over the socket. Does no I/O until start().
  StoreServer(ListeningSocket socket, ServerOptions options = {});
  ~StoreServer();  // stops the loop and joins its thread

  /// Raises RLIMIT_NOFILE to its hard limit, then starts serving on a background thread.
  /// Returns at once. Accepted sockets are close-on-exec, so spawned workers inherit none.
  void start();
  /// Stops serving, closes every connection, joins the thread. Idempotent.
  void stop();
  /// Empties the key space and closes connections that are parked in a WAIT, so that a
  /// new attempt starts from nothing; keys under `keep_prefix` (when given) stay, as do
  /// waits on them only (StoreState::clear). Thread-safe; returns when done.
  void clear(const std::string& keep_prefix = {});

  std::uint16_t port() const;
  /// Number of keys now (thread-safe; for diagnostics and tests).
  std::size_t num_keys() const;
  /// Number of connections parked in a WAIT (thread-safe; for diagnostics and tests).
  std::size_t num_parked() const;
  /// Number of open client connections (thread-safe).
  std::size_t num_connections() const;
  /// Bytes of unfinished requests buffered across all connections (thread-safe; for
  /// diagnostics and tests).
  std::size_t buffered_bytes() const;
  /// Bytes of replies not yet sent, across all connections (thread-safe; for diagnostics and
  /// tests).
  std::size_t unsent_bytes() const;

  /// One client connection as the launcher's diagnosis sees it.
  struct ClientInfo {
    std::string peer_addr;  // the client's address and port: its socket's local end
    std::uint16_t peer_port = 0;
    std::uint64_t requests = 0;        // requests served so far
    std::vector<std::string> waiting;  // keys a parked WAIT still misses
  };
  /// Every open connection (thread-safe; read-only; waits for the loop a moment).
  std::vector<ClientInfo> clients() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Raises RLIMIT_NOFILE to its hard limit so thousands of workers fit; returns the limit now
/// (nullopt: unlimited or unknown).
std::optional<std::uint64_t> raise_open_file_limit();

}  // namespace xlaunch::rendezvous
