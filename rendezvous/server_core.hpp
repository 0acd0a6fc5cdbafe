// StoreServer: Boost.Asio, one io_context on one thread. Client sockets live in a
// level-triggered epoll set (ReadySet) whose descriptor the loop waits on: each wake-up
// takes every ready socket at once, requests need no re-registration, and an idle
// connection costs its socket and a small Connection. Reads go to a shared scratch buffer;
// a connection keeps only the bytes of an incomplete request and its unsent replies.
//
// This header is the server's state, private to rendezvous/: server_io.cpp runs the
// connections (accept, read, write, close), server_requests.cpp hands complete requests to
// the StoreState and delivers what they cause, server.cpp is StoreServer's public face.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio.hpp>
#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>

#include "rendezvous/pending_budget.hpp"
#include "rendezvous/pending_bytes.hpp"
#include "rendezvous/ready_set.hpp"
#include "rendezvous/store_server.hpp"
#include "rendezvous/store_state.hpp"
#include "rendezvous/wire_codec.hpp"

namespace xlaunch::rendezvous {

// Stop taking a client's requests while more than this of its replies wait unsent.
inline constexpr std::size_t kMaxQueuedOutput = 16 * 1024 * 1024;

struct Connection {
  Connection(int fd, ConnId id, const CodecLimits& limits, Dialect legacy_default)
      : fd(fd), id(id), decoder(limits, legacy_default) {}

  std::size_t unsent() const { return out.size() - sent; }

  int fd;
  ConnId id;
  RequestDecoder decoder;
  PendingBytes partial;  // bytes of a request not complete yet
  std::size_t need = 1;  // don't decode again before this many bytes
  std::string out;       // replies; out[0, sent) is already written
  std::size_t sent = 0;
  bool watching_write = false;  // the ready set reports this socket writable
  bool paused = false;          // not reading: too many unsent replies
  bool backlog = false;         // `partial` holds whole requests, left while replies wait
  // For the launcher's diagnosis (StoreServer::clients): who it is and how busy.
  std::string peer_addr;
  std::uint16_t peer_port = 0;
  std::uint64_t requests = 0;
};

// The server's state; StoreServer::Impl is this (Impl itself is private to StoreServer).
struct ServerCore {
  ServerCore(ListeningSocket socket, ServerOptions opts);
  ~ServerCore() { close_all(); }

  void log(const std::string& message);
  void accept();
  void on_acceptable(const boost::system::error_code& ec);
  void wait_ready();
  void on_ready();
  // Each returns false when it closed `c` (which is then gone: do not touch it).
  bool on_readable(Connection& c);
  bool serve(Connection& c, std::span<const std::uint8_t> fresh);
  bool process(Connection& c, std::span<const std::uint8_t> data, std::size_t& used);
  bool flush(Connection& c);
  bool account_buffered(Connection& c);
  bool account_queued(Connection& c);
  /// The same from within a request of `self`, which serve() checks once it is handled:
  /// closes the others that hold the most unsent output.
  void account_queued_others(ConnId self);
  void close_for_output(const PendingBudget::Holder& most);
  void close(Connection& c, const std::string& reason);
  void deliver(const Effects& fx, ConnId self);
  void update_counters();
  void close_all();
  void clear_now(std::string_view keep_prefix = {});

  boost::asio::io_context io;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{io.get_executor()};
  ServerOptions options;
  CodecLimits codec_limits;
  Dialect legacy_default;
  boost::asio::ip::tcp::acceptor acceptor{io};
  boost::asio::steady_timer accept_retry{io};
  ReadySet ready;
  // Borrows ready.fd() (released, never closed, by close_all).
  boost::asio::posix::stream_descriptor ready_watch{io};
  std::uint16_t port = 0;
  std::thread thread;
  bool stopped = false;

  // Owned by the io thread.
  // One reply may be as large as the largest value (a GET), or the buffered-bytes limit.
  StoreState state{
      StateLimits{options.limits.max_value_bytes,
                  std::max(options.limits.max_buffered_bytes, options.limits.max_value_bytes + 8),
                  options.limits.max_stored_bytes}};
  // Node-based: a Connection& stays valid while others are added or closed.
  std::unordered_map<ConnId, Connection> conns;
  PendingBudget pending{options.limits.max_buffered_bytes};
  // Unsent replies across all connections, bounded like unfinished requests.
  PendingBudget queued{options.limits.max_buffered_bytes};
  std::size_t over_output_cap = 0;  // connections closed for it
  // Log lines: a burst, then a few a second, so a storm of bad clients cannot flood (or,
  // through a full stderr, stop) the store.
  std::chrono::steady_clock::time_point log_window{};
  std::size_t log_lines_in_window = 0;
  std::size_t log_suppressed = 0;
  ConnId next_id = 1;
  std::array<std::uint8_t, 64 * 1024> scratch{};
  Request request;  // decoded requests are handled one at a time, so one is shared
  std::size_t rejected = 0;
  std::size_t over_buffer_cap = 0;  // connections closed for max_buffered_bytes
  std::size_t accept_errors = 0;

  // Readable from any thread.
  std::atomic<std::size_t> num_keys{0};
  std::atomic<std::size_t> num_conns{0};
  std::atomic<std::size_t> num_parked{0};
  std::atomic<std::size_t> num_buffered{0};
  std::atomic<std::size_t> num_unsent{0};
};

}  // namespace xlaunch::rendezvous
