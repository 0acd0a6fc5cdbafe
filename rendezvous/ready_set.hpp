// The store server's client sockets, watched by one level-triggered epoll set. The
// server's Asio loop waits for the set's own descriptor, then takes every ready socket in
// one call: nothing is registered again per request, and an idle socket costs the server
// only its entry here (no Asio socket, no parked operation).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace xlaunch::rendezvous {

class ReadySet {
 public:
  /// Creates the epoll set (close-on-exec). Throws StoreError when the kernel refuses.
  ReadySet();
  ~ReadySet();
  ReadySet(const ReadySet&) = delete;
  ReadySet& operator=(const ReadySet&) = delete;

  /// The set's descriptor: readable while any watched socket is ready.
  int fd() const { return fd_; }

  /// Starts watching `socket` for reading, reported with `tag`. Returns 0, or an errno.
  int add(int socket, std::uint64_t tag);
  /// Changes what `socket` is watched for (neither: stays in the set, reports only errors).
  void watch(int socket, std::uint64_t tag, bool readable, bool writable);

  struct Event {
    std::uint64_t tag;
    bool readable;  // also set on hang-up and errors: the read then tells what happened
    bool writable;
  };
  /// Fills `out` with sockets ready now, without blocking; returns how many.
  std::size_t take_ready(std::span<Event> out);

 private:
  int fd_ = -1;
};

/// One non-blocking read or write on a socket.
struct Transfer {
  enum State { Ok, WouldBlock, Closed } state = Ok;
  std::size_t bytes = 0;
};
Transfer read_some(int socket, std::span<std::uint8_t> buffer);
/// Never raises SIGPIPE: a peer that went away reads as Closed.
Transfer write_some(int socket, std::string_view bytes);

/// "10.0.0.7:53412" for a connected socket, "?" when the kernel no longer knows.
std::string peer_address(int socket);

}  // namespace xlaunch::rendezvous
