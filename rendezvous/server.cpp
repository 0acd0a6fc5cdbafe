// StoreServer: Boost.Asio, one io_context on one thread. Client sockets live in a
// level-triggered epoll set (ReadySet) whose descriptor the loop waits on: each wake-up
// takes every ready socket at once, requests need no re-registration, and an idle
// connection costs its socket and a small Connection. Reads go to a shared scratch buffer;
// a connection keeps only the bytes of an incomplete request and its unsent replies.
#include <fmt/core.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <future>
#include <memory>
#include <span>
#include <thread>
#include <unordered_map>

#include "rendezvous/pending_budget.hpp"
#include "rendezvous/pending_bytes.hpp"
#include "rendezvous/ready_set.hpp"
#include "rendezvous/socket_posix.hpp"
#include "rendezvous/store_error.hpp"
#include "rendezvous/store_server.hpp"
#include "rendezvous/store_state.hpp"
#include "rendezvous/wire_codec.hpp"

namespace xlaunch::rendezvous {
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {
// Stop reading from a client whose unread replies pile up beyond this.
constexpr std::size_t kMaxQueuedOutput = 16 * 1024 * 1024;
// Give back a big reply's buffer once it has been sent.
constexpr std::size_t kKeepBufferBytes = 256 * 1024;
// Ready sockets taken per wake-up; more wait for the next round, after other work.
constexpr std::size_t kReadyBatch = 256;
}  // namespace

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
  // For the launcher's diagnosis (StoreServer::clients): who it is and how busy.
  std::string peer_addr;
  std::uint16_t peer_port = 0;
  std::uint64_t requests = 0;
};

// The server's state; StoreServer::Impl is this (Impl itself is private to StoreServer).
struct ServerCore {
  ServerCore(ListeningSocket socket, ServerOptions opts);
  ~ServerCore() { close_all(); }

  void log(const std::string& message) {
    fmt::print(stderr, "{}: {}\n", options.log_prefix, message);
  }
  void accept();
  void on_acceptable(const boost::system::error_code& ec);
  void wait_ready();
  void on_ready();
  // Each returns false when it closed `c` (which is then gone: do not touch it).
  bool on_readable(Connection& c);
  bool process(Connection& c, std::span<const std::uint8_t> data, std::size_t& used);
  bool flush(Connection& c);
  bool account_buffered(Connection& c);
  void close(Connection& c, const std::string& reason);
  void deliver(const Effects& fx, ConnId self);
  void update_counters();
  void close_all();
  void clear_now(std::string_view keep_prefix = {});

  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  ServerOptions options;
  CodecLimits codec_limits;
  Dialect legacy_default;
  tcp::acceptor acceptor{io};
  asio::steady_timer accept_retry{io};
  ReadySet ready;
  // Borrows ready.fd() (released, never closed, by close_all).
  asio::posix::stream_descriptor ready_watch{io};
  std::uint16_t port = 0;
  std::thread thread;
  bool stopped = false;

  // Owned by the io thread.
  StoreState state;
  // Node-based: a Connection& stays valid while others are added or closed.
  std::unordered_map<ConnId, Connection> conns;
  PendingBudget pending{options.limits.max_buffered_bytes};
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
};

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

void ServerCore::accept() {
  acceptor.async_wait(tcp::acceptor::wait_read,
                      [this](const boost::system::error_code& ec) { on_acceptable(ec); });
}

// Accepts with accept4(SOCK_CLOEXEC) ourselves: asio's accept leaves descriptors
// inheritable, and the launcher forks workers while this loop runs.
void ServerCore::on_acceptable(const boost::system::error_code& ec) {
  if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
  // A bounded batch per wake-up keeps a connect storm from starving existing clients.
  for (int batch = 0; batch < 256; ++batch) {
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
    if (events[i].writable && !flush(c)) continue;
    // A paused socket is watched for writing only, so "readable" means a hang-up or an
    // error there, which the write finds.
    if (events[i].readable) c.paused ? flush(c) : on_readable(c);
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
  auto data = c.partial.with(std::span<const std::uint8_t>(scratch.data(), got.bytes));
  std::size_t used = 0;
  if (!process(c, data, used)) return false;
  c.partial.keep_rest(data, used);
  if (!account_buffered(c)) return false;
  return flush(c);
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

// Handles every complete request at the front of `data`; `used` = the bytes they took.
bool ServerCore::process(Connection& c, std::span<const std::uint8_t> data, std::size_t& used) {
  std::string error;
  while (data.size() - used >= c.need) {
    DecodeResult res = c.decoder.decode(data.subspan(used), request);
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
    if (c.out.capacity() > kKeepBufferBytes) std::string().swap(c.out);
  } else if (c.sent >= kKeepBufferBytes && c.sent >= c.unsent()) {
    // A client that never quite catches up would otherwise keep every written byte.
    c.out.erase(0, c.sent);
    c.sent = 0;
  }
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
  conns.erase(id);
  num_buffered.store(pending.total(), std::memory_order_relaxed);
  // Release: a thread that reads the new count also reads the buffered bytes above.
  num_conns.store(conns.size(), std::memory_order_release);
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
    it->second.out += bytes;
    if (id != self) flush(it->second);
  }
}

void ServerCore::update_counters() {
  num_keys.store(state.num_keys(), std::memory_order_relaxed);
  num_parked.store(state.num_parked(), std::memory_order_relaxed);
}

void ServerCore::close_all() {
  boost::system::error_code ec;
  acceptor.close(ec);
  accept_retry.cancel();
  if (ready_watch.is_open()) ready_watch.release();
  for (auto& [id, c] : conns) {
    close_fd(c.fd);
    pending.forget(id);
  }
  conns.clear();
  num_conns.store(0);
  num_buffered.store(0);
}

void ServerCore::clear_now(std::string_view keep_prefix) {
  for (ConnId id : state.clear(keep_prefix)) {
    auto it = conns.find(id);
    if (it != conns.end()) close(it->second, {});
  }
  update_counters();
}

struct StoreServer::Impl : ServerCore {
  using ServerCore::ServerCore;
};

StoreServer::StoreServer(ListeningSocket socket, ServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(socket), std::move(options))) {}

StoreServer::~StoreServer() { stop(); }

void StoreServer::start() {
  if (impl_->thread.joinable() || impl_->stopped) return;
  raise_open_file_limit();
  impl_->accept();
  impl_->wait_ready();
  impl_->thread = std::thread([impl = impl_.get()] {
    for (;;) {
      try {
        impl->io.run();
        return;
      } catch (const std::exception& e) {
        // One request's failure (e.g. out of memory) must not end the store.
        impl->log(fmt::format("internal error, continuing: {}", e.what()));
      }
    }
  });
}

void StoreServer::stop() {
  if (impl_->stopped) return;
  impl_->stopped = true;
  impl_->io.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  // The loop is stopped, so this thread may now touch what it owned.
  impl_->close_all();
}

void StoreServer::clear(const std::string& keep_prefix) {
  if (!impl_->thread.joinable() || impl_->stopped) {
    impl_->clear_now(keep_prefix);
    return;
  }
  std::promise<void> done;
  asio::post(impl_->io, [&] {
    impl_->clear_now(keep_prefix);
    done.set_value();
  });
  done.get_future().wait();
}

std::vector<StoreServer::ClientInfo> StoreServer::clients() const {
  auto collect = [core = impl_.get()] {
    std::vector<ClientInfo> out;
    std::unordered_map<ConnId, std::vector<std::string>> waiting;
    for (auto& [conn, keys] : core->state.waiting()) waiting[conn] = std::move(keys);
    for (const auto& [id, c] : core->conns) {
      ClientInfo info{c.peer_addr, c.peer_port, c.requests, {}};
      if (auto w = waiting.find(id); w != waiting.end()) info.waiting = std::move(w->second);
      out.push_back(std::move(info));
    }
    return out;
  };
  if (!impl_->thread.joinable() || impl_->stopped) return collect();
  std::promise<std::vector<ClientInfo>> done;
  asio::post(impl_->io, [&] { done.set_value(collect()); });
  return done.get_future().get();
}

std::uint16_t StoreServer::port() const { return impl_->port; }

std::size_t StoreServer::num_keys() const { return impl_->num_keys.load(); }

std::size_t StoreServer::num_parked() const { return impl_->num_parked.load(); }

std::size_t StoreServer::num_connections() const { return impl_->num_conns.load(); }

std::size_t StoreServer::buffered_bytes() const { return impl_->num_buffered.load(); }

}  // namespace xlaunch::rendezvous
