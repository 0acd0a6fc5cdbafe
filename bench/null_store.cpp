// The cheapest server that still answers the benchmark's requests correctly: a raw epoll
// loop (level-triggered, so no epoll_ctl per request), xlaunch's decoder, one read and one
// write per batch of requests, and no key-value map (every GET returns the same 64 bytes).
// store_bench.py runs it beside the real servers: what it reaches is the most any
// single-threaded server can show with that load generator on that machine, so it tells
// how much of a ratio is left for a server to win.
//
//   null_store [--busy_poll]   (prints "listening on 127.0.0.1:PORT", serves until killed)
//
// --busy_poll never sleeps (epoll_wait with timeout 0): the server side of a round trip
// then pays no wake-up, which bounds what spinning could buy a server at 1 client.
//
// Only SET, GET, ADD and GETNUMKEYS (what `store_load ops` sends) are answered; any other
// request closes its connection.
#include <fmt/core.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>

#include "rendezvous/pending_bytes.hpp"
#include "rendezvous/wire_codec.hpp"

using namespace xlaunch::rendezvous;

namespace {

struct Peer {
  RequestDecoder decoder;
  PendingBytes partial;
};

int listen_loopback() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 4096) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    throw std::runtime_error("bind/listen on 127.0.0.1 failed");
  }
  fmt::print("listening on 127.0.0.1:{}\n", ntohs(addr.sin_port));
  std::fflush(stdout);
  return fd;
}

// Answers every complete request at the front of `data`; false: close the connection.
bool answer(Peer& peer, std::span<const std::uint8_t> data, std::size_t& used, std::string& out,
            std::int64_t& counter) {
  static const std::string value(64, 'v');
  Request request;
  used = 0;
  for (;;) {
    DecodeResult r = peer.decoder.decode(data.subspan(used), request);
    if (r.status == DecodeStatus::NeedMore) return true;
    if (r.status == DecodeStatus::Malformed) return false;
    used += r.size;
    switch (request.op) {
      case Op::Set:
        break;
      case Op::Get:
        put_bytes(out, value);
        break;
      case Op::Add:
        put_i64(out, counter += request.delta);
        break;
      case Op::NumKeys:
        put_i64(out, 1);
        break;
      default:
        return false;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const bool busy_poll = argc > 1 && std::string_view(argv[1]) == "--busy_poll";
  int listener = listen_loopback();
  int ep = ::epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = listener;
  ::epoll_ctl(ep, EPOLL_CTL_ADD, listener, &ev);
  std::unordered_map<int, Peer> peers;
  std::array<epoll_event, 256> events;
  std::array<std::uint8_t, 64 * 1024> scratch;
  std::string out;
  std::int64_t counter = 0;
  auto drop = [&](int fd) {
    ::close(fd);  // also removes it from the epoll set
    peers.erase(fd);
  };
  for (;;) {
    int n = ::epoll_wait(ep, events.data(), static_cast<int>(events.size()), busy_poll ? 0 : -1);
    for (int i = 0; i < n; ++i) {
      int fd = events[i].data.fd;
      if (fd == listener) {
        int conn = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
        if (conn < 0) continue;
        int one = 1;
        ::setsockopt(conn, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        epoll_event cev{};
        cev.events = EPOLLIN;
        cev.data.fd = conn;
        ::epoll_ctl(ep, EPOLL_CTL_ADD, conn, &cev);
        peers.try_emplace(conn);
        continue;
      }
      Peer& peer = peers[fd];
      ssize_t got = ::read(fd, scratch.data(), scratch.size());
      if (got <= 0) {
        drop(fd);
        continue;
      }
      auto data = peer.partial.with(
          std::span<const std::uint8_t>(scratch.data(), static_cast<std::size_t>(got)));
      std::size_t used = 0;
      out.clear();
      if (!answer(peer, data, used, out, counter)) {
        drop(fd);
        continue;
      }
      peer.partial.keep_rest(data, used);
      // Replies are small and the client reads them at once: a blocking write is fine here.
      if (!out.empty() && ::write(fd, out.data(), out.size()) != static_cast<ssize_t>(out.size())) {
        drop(fd);
      }
    }
  }
}
