#include <arpa/inet.h>
#include <fmt/core.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "rendezvous/ready_set.hpp"
#include "rendezvous/store_error.hpp"

namespace xlaunch::rendezvous {
namespace {

// Hang-ups and errors are always reported; they surface as readable so that the read
// that follows finds the end of stream or the error.
constexpr std::uint32_t kBroken = EPOLLHUP | EPOLLERR | EPOLLRDHUP;

epoll_event make_event(std::uint64_t tag, bool readable, bool writable) {
  epoll_event ev{};
  ev.events = (readable ? EPOLLIN | EPOLLRDHUP : 0u) | (writable ? EPOLLOUT : 0u);
  ev.data.u64 = tag;
  return ev;
}

}  // namespace

ReadySet::ReadySet() : fd_(::epoll_create1(EPOLL_CLOEXEC)) {
  if (fd_ < 0) throw StoreError(fmt::format("store: epoll_create1: {}", std::strerror(errno)));
}

ReadySet::~ReadySet() { ::close(fd_); }

int ReadySet::add(int socket, std::uint64_t tag) {
  epoll_event ev = make_event(tag, true, false);
  return ::epoll_ctl(fd_, EPOLL_CTL_ADD, socket, &ev) == 0 ? 0 : errno;
}

void ReadySet::watch(int socket, std::uint64_t tag, bool readable, bool writable) {
  epoll_event ev = make_event(tag, readable, writable);
  ::epoll_ctl(fd_, EPOLL_CTL_MOD, socket, &ev);
}

std::size_t ReadySet::take_ready(std::span<Event> out) {
  std::array<epoll_event, 256> raw;
  int max = static_cast<int>(std::min(out.size(), raw.size()));
  int n;
  do {
    n = ::epoll_wait(fd_, raw.data(), max, 0);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return 0;
  for (int i = 0; i < n; ++i) {
    std::uint32_t e = raw[i].events;
    out[i] = {raw[i].data.u64, (e & (EPOLLIN | kBroken)) != 0, (e & EPOLLOUT) != 0};
  }
  return static_cast<std::size_t>(n);
}

Transfer read_some(int socket, std::span<std::uint8_t> buffer) {
  for (;;) {
    ssize_t n = ::recv(socket, buffer.data(), buffer.size(), 0);
    if (n > 0) return {Transfer::Ok, static_cast<std::size_t>(n)};
    if (n == 0) return {Transfer::Closed, 0};
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return {Transfer::WouldBlock, 0};
    return {Transfer::Closed, 0};
  }
}

Transfer write_some(int socket, std::string_view bytes) {
  for (;;) {
    ssize_t n = ::send(socket, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n >= 0) return {Transfer::Ok, static_cast<std::size_t>(n)};
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return {Transfer::WouldBlock, 0};
    return {Transfer::Closed, 0};
  }
}

std::string peer_address(int socket) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getpeername(socket, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "?";
  char host[INET6_ADDRSTRLEN] = "?";
  std::uint16_t port = 0;
  if (addr.ss_family == AF_INET6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&addr);
    ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    port = ntohs(a->sin6_port);
    return fmt::format("[{}]:{}", host, port);
  }
  auto* a = reinterpret_cast<sockaddr_in*>(&addr);
  ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
  port = ntohs(a->sin_port);
  return fmt::format("{}:{}", host, port);
}

}  // namespace xlaunch::rendezvous
