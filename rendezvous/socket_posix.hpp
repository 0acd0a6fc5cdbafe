// Blocking client sockets with deadlines: the only place the client calls the OS.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace xlaunch::rendezvous {

using Clock = std::chrono::steady_clock;

/// Outcome of one socket operation.
struct IoStatus {
  enum Code { Ok, Timeout, Eof, Error } code = Ok;
  int err = 0;  // errno for Error
  bool ok() const { return code == Ok; }
  /// "connection closed by the server", "Connection reset by peer", ...
  std::string describe() const;
};

/// An owned, connected TCP socket (blocking calls bounded by deadlines).
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& other) noexcept;
  Socket& operator=(Socket&& other) noexcept;
  ~Socket();

  bool valid() const { return fd_ >= 0; }
  void close();

  /// Resolves host:port (every address, IPv6 and IPv4) and tries each in turn until one
  /// connects or `deadline` passes. On failure returns an invalid Socket and sets `cause`.
  static Socket connect(const std::string& host, std::uint16_t port, Clock::time_point deadline,
                        std::string& cause);

  IoStatus send_all(const void* data, std::size_t size, Clock::time_point deadline);
  IoStatus recv_exact(void* data, std::size_t size, Clock::time_point deadline);

 private:
  IoStatus wait_for(short events, Clock::time_point deadline);
  int fd_ = -1;
};

/// Accepts one connection from a non-blocking listening socket as a close-on-exec,
/// non-blocking descriptor with TCP_NODELAY. Returns -1 with `error` = errno (EAGAIN: none
/// waiting).
int accept_connection(int listen_fd, int& error);

/// The peer's numeric address and port of a connected socket ("" and 0 when unknown).
void peer_of(int fd, std::string& addr, std::uint16_t& port);

/// Closes a descriptor the caller owns.
void close_fd(int fd);

}  // namespace xlaunch::rendezvous
