// The store server's connections on its event loop: accepting, reading, writing, closing,
// and the bound on what they buffer (server_core.hpp).
#include <fmt/core.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "rendezvous/server_core.hpp"
#include "rendezvous/socket_posix.hpp"
#include "rendezvous/store_error.hpp"

namespace xlaunch::rendezvous {
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {
// Written bytes dropped from the front of a reply buffer a slow client has not taken whole.
constexpr std::size_t kKeepBufferBytes = 256 * 1024;
// Room an idle connection keeps for its next replies: small ones need no allocation, and
// thousands of idle clients do not each hold their largest reply's buffer.
constexpr std::size_t kIdleReplyCapacity = 1024;
// Ready sockets taken per wake-up; more wait for the next round, after other work.
constexpr std::size_t kReadyBatch = 256;
// Connections accepted per wake-up: a full accept queue at the default net.core.somaxconn
// (4096), so one wake-up empties it. With 256, a 20,000-client storm overflowed the queue
// 1,100-2,200 times (TcpExtListenOverflows), and each overflow costs a client a SYN
// retransmit (1 s, then 2, 4...); emptying the queue delays existing clients by a few ms.
constexpr std::size_t kAcceptBatch = 4096;
}  // namespace

ServerCore::ServerCore(ListeningSocket socket, ServerOptions opts)
    : options(std::move(opts)),
      legacy_default(options.legacy_dialect == LegacyDialect::Torch21 ? Dialect::D1 : Dialect::D0),
      port(socket.port()) {
  codec_limits.max_key_bytes = options.limits.max_key_bytes;
  codec_limits.max_value_bytes = options.limits.max_value_bytes;
  codec_limits.max_keys_per_request = options.limits.max_keys_per_request;
  // A request larger than the global cap could never arrive whole: refuse it from its
  // declared length rather than buffer it first.
  codec_limits.max_request_bytes =
      std::min(options.limits.max_request_bytes, options.limits.max_buffered_bytes);
  int fd = socket.release();
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  boost::system::error_code ec;
  acceptor.assign(addr.ss_family == AF_INET6 ? tcp::v6() : tcp::v4(), fd, ec);
  if (!ec) acceptor.non_blocking(true, ec);
  if (!ec) ready_watch.assign(ready.fd(), ec);
  if (ec) throw StoreError(fmt::format("store on port {}: {}", port, ec.message()));
}

void ServerCore::log(const std::string& message) {
  constexpr std::size_t kLinesPerSecond = 10;
  const auto now = std::chrono::steady_clock::now();
  if (now - log_window >= std::chrono::seconds(1)) {
    log_window = now;
    log_lines_in_window = 0;
  }
  if (log_lines_in_window++ >= kLinesPerSecond) {
    ++log_suppressed;
    return;
  }
  std::string line = fmt::format("{}: {}\n", options.log_prefix, message);
  if (log_suppressed > 0) {
    line = fmt::format("{}: ({} earlier messages not shown: more than {} a second)\n{}",
                       options.log_prefix, log_suppressed, kLinesPerSecond, line);
    log_suppressed = 0;
  }
  if (options.log_sink) {
    options.log_sink(line);
  } else {
    fmt::print(stderr, "{}", line);
  }
}

void ServerCore::accept() {
  acceptor.async_wait(tcp::acceptor::wait_read,
                      [this](const boost::system::error_code& ec) { on_acceptable(ec); });
}

// Accepts with accept4(SOCK_CLOEXEC) ourselves: asio's accept leaves descriptors
// inheritable, and the launcher forks workers while this loop runs.
void ServerCore::on_acceptable(const boost::system::error_code& ec) {
  if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
  // A bounded batch per wake-up keeps a connect storm from starving existing clients.
  for (std::size_t batch = 0; batch < kAcceptBatch; ++batch) {
    int error = 0;
    int fd = accept_connection(acceptor.native_handle(), error);
    if (fd < 0) {
      if (error == EAGAIN || error == EWOULDBLOCK) {
        accept();
        return;
      }
      if (error == EINTR || error == ECONNABORTED) continue;
      // Out of descriptors (or similar): say so now and then, back off briefly, carry on.
      if (accept_errors++ % 1000 == 0) {
        log(fmt::format("accept failed: {} (raise the open-file limit: ulimit -n)",
                        std::strerror(error)));
      }
      accept_retry.expires_after(std::chrono::milliseconds(50));
      accept_retry.async_wait([this](const boost::system::error_code& tec) {
        if (!tec) accept();
      });
      return;
    }
    if (conns.size() >= options.limits.max_connections) {
      if (rejected++ % 1000 == 0) {
        log(fmt::format("refusing connection: {} open connections is the limit (max_connections)",
                        options.limits.max_connections));
      }
      close_fd(fd);
      continue;
    }
    ConnId id = next_id++;
    if (int err = ready.add(fd, id); err != 0) {
      if (accept_errors++ % 1000 == 0) {
        log(fmt::format("cannot watch a new connection: {} (see fs.epoll.max_user_watches)",
                        std::strerror(err)));
      }
      close_fd(fd);
      continue;
    }
    Connection& added = conns.try_emplace(id, fd, id, codec_limits, legacy_default).first->second;
    peer_of(fd, added.peer_addr, added.peer_port);
    num_conns.store(conns.size(), std::memory_order_relaxed);
  }
  asio::post(io, [this] { on_acceptable({}); });
}

void ServerCore::wait_ready() {
  ready_watch.async_wait(asio::posix::stream_descriptor::wait_read,
                         [this](const boost::system::error_code& ec) {
                           if (!ec) on_ready();
                         });
}

void ServerCore::on_ready() {
  std::array<ReadySet::Event, kReadyBatch> events;
  std::size_t n = ready.take_ready(events);
  for (std::size_t i = 0; i < n; ++i) {
    auto it = conns.find(events[i].tag);
    if (it == conns.end()) continue;  // closed earlier in this batch
    Connection& c = it->second;
    try {
      if (events[i].writable && !flush(c)) continue;
      // Its replies drained: the requests it sent meanwhile are next, before any new read.
      if (c.backlog && !c.paused && !serve(c, {})) continue;
      // A paused socket is watched for writing only, so "readable" means a hang-up or an
      // error there, which the write finds.
      if (events[i].readable) c.paused ? flush(c) : on_readable(c);
    } catch (const std::exception& e) {
      // Out of memory in one request: that client goes; the loop and everyone else carry on.
      if (conns.count(events[i].tag) != 0) close(c, fmt::format("internal error: {}", e.what()));
    }
  }
  update_counters();
  if (n == events.size()) {
    // Probably more ready: take them after the other queued work (accepts, clear()).
    asio::post(io, [this] { on_ready(); });
    return;
  }
  wait_ready();
}

bool ServerCore::on_readable(Connection& c) {
  Transfer got = read_some(c.fd, scratch);
  if (got.state == Transfer::WouldBlock) return true;
  if (got.state == Transfer::Closed) {
    close(c, {});  // EOF or reset: a client going away is normal, even mid-request
    return false;
  }
  return serve(c, std::span<const std::uint8_t>(scratch.data(), got.bytes));
}

// Handles the whole requests in what `c` keeps plus `fresh`, writing replies as it goes.
// While more than kMaxQueuedOutput of replies wait unsent, the rest stays kept (backlog) and
// the socket is not read: a client that asks for much and reads nothing holds a bounded
// amount, and resumes (on_ready) once it reads.
bool ServerCore::serve(Connection& c, std::span<const std::uint8_t> fresh) {
  for (;;) {
    auto data = c.partial.with(fresh);
    fresh = {};
    std::size_t used = 0;
    if (!process(c, data, used)) return false;
    c.partial.keep_rest(data, used);
    if (!account_buffered(c) || !flush(c) || !account_queued(c)) return false;
    if (!c.backlog || c.paused) return true;
  }
}

// Records what `c` buffers now. Past max_buffered_bytes, closes the connection that buffers
// the most (which need not be `c`) until the total fits: that one costs the most memory and
// is the likeliest to be hostile. Logs the first such closure and every 1000th, so a storm
// cannot flood the log. Returns false when `c` itself was closed.
bool ServerCore::account_buffered(Connection& c) {
  pending.set(c.id, c.partial.size());
  bool c_open = true;
  while (pending.exceeded()) {
    PendingBudget::Holder most = *pending.largest();
    Connection& victim = conns.at(most.conn);
    std::string reason;
    if (over_buffer_cap++ % 1000 == 0) {
      reason = fmt::format(
          "it buffers {} bytes of unfinished requests, the most of any connection, while all "
          "connections together buffer {}, over max_buffered_bytes ({}); closures for this "
          "limit so far: {}, logged every 1000th (raise --max_buffered_bytes if clients send "
          "large requests at once)",
          most.bytes, pending.total(), pending.cap(), over_buffer_cap);
    }
    if (most.conn == c.id) c_open = false;
    close(victim, reason);
  }
  num_buffered.store(pending.total(), std::memory_order_relaxed);
  return c_open;
}

// Records what `c` has unsent. Past max_buffered_bytes of unsent replies across all
// connections, closes the one with the most until the total fits, as for unfinished
// requests. Returns false when `c` itself was closed.
bool ServerCore::account_queued(Connection& c) {
  bool c_open = true;
  while (queued.exceeded()) {
    PendingBudget::Holder most = *queued.largest();
    if (most.conn == c.id) c_open = false;
    close_for_output(most);
  }
  return c_open;
}

void ServerCore::account_queued_others(ConnId self) {
  while (queued.exceeded()) {
    PendingBudget::Holder most = *queued.largest();
    if (most.conn == self) return;
    close_for_output(most);
  }
}

void ServerCore::close_for_output(const PendingBudget::Holder& most) {
  std::string reason;
  if (over_output_cap++ % 1000 == 0) {
    reason = fmt::format(
        "{} bytes of replies wait for it to read them, the most of any connection, while all "
        "connections together have {} unsent, over max_buffered_bytes ({}); closures for this "
        "limit so far: {}, logged every 1000th",
        most.bytes, queued.total(), queued.cap(), over_output_cap);
  }
  close(conns.at(most.conn), reason);
}

// Writes what the socket takes now; the ready set reports when it takes more.
bool ServerCore::flush(Connection& c) {
  if (c.unsent() > 0) {
    Transfer put = write_some(c.fd, std::string_view(c.out).substr(c.sent));
    if (put.state == Transfer::Closed) {
      close(c, {});
      return false;
    }
    c.sent += put.bytes;
  }
  if (c.unsent() == 0) {
    c.sent = 0;
    c.out.clear();
    if (c.out.capacity() > kIdleReplyCapacity) std::string().swap(c.out);
  } else if (c.sent >= kKeepBufferBytes && c.sent >= c.unsent()) {
    // A client that never quite catches up would otherwise keep every written byte.
    c.out.erase(0, c.sent);
    c.sent = 0;
  }
  queued.set(c.id, c.unsent());
  num_unsent.store(queued.total(), std::memory_order_relaxed);
  bool want_write = c.unsent() > 0;
  bool pause = c.unsent() > kMaxQueuedOutput;
  if (want_write != c.watching_write || pause != c.paused) {
    c.watching_write = want_write;
    c.paused = pause;
    ready.watch(c.fd, c.id, !pause, want_write);
  }
  return true;
}

// Closes the socket and forgets the connection; logs `reason` unless it is empty.
void ServerCore::close(Connection& c, const std::string& reason) {
  if (!reason.empty()) {
    log(fmt::format("closing connection {} from {} ({} protocol): {}", c.id, peer_address(c.fd),
                    dialect_name(c.decoder.dialect()), reason));
  }
  ConnId id = c.id;
  close_fd(c.fd);  // also leaves the ready set
  state.disconnect(id);
  pending.forget(id);
  queued.forget(id);
  conns.erase(id);
  num_buffered.store(pending.total(), std::memory_order_relaxed);
  num_unsent.store(queued.total(), std::memory_order_relaxed);
  // Release: a thread that reads the new count also reads the buffered bytes above.
  num_conns.store(conns.size(), std::memory_order_release);
}

void ServerCore::close_all() {
  boost::system::error_code ec;
  acceptor.close(ec);
  accept_retry.cancel();
  if (ready_watch.is_open()) ready_watch.release();
  for (auto& [id, c] : conns) {
    close_fd(c.fd);
    pending.forget(id);
    queued.forget(id);
  }
  conns.clear();
  num_conns.store(0);
  num_buffered.store(0);
  num_unsent.store(0);
}

}  // namespace xlaunch::rendezvous
