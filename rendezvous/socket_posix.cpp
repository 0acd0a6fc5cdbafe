#include "rendezvous/socket_posix.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace xlaunch::rendezvous {
namespace {

int millis_until(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) return 0;
  // Round up so a sub-millisecond remainder still waits instead of spinning.
  return static_cast<int>(std::min<long long>(left.count() + 1, 1 << 30));
}

}  // namespace

std::string IoStatus::describe() const {
  switch (code) {
    case Ok:
      return "ok";
    case Timeout:
      return "timed out";
    case Eof:
      return "connection closed by the server";
    case Error:
      return std::strerror(err);
  }
  return "?";
}

Socket::Socket(Socket&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

Socket::~Socket() { close(); }

void Socket::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

IoStatus Socket::wait_for(short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd_, events, 0};
    int rc = ::poll(&p, 1, millis_until(deadline));
    if (rc > 0) return {};
    // One poll waits 2^30 ms at most: a longer deadline (12 days and more) polls again.
    if (rc == 0 && Clock::now() >= deadline) return {IoStatus::Timeout};
    if (rc == 0) continue;
    if (errno != EINTR) return {IoStatus::Error, errno};
  }
}

Socket Socket::connect(const std::string& host, std::uint16_t port, Clock::time_point deadline,
                       std::string& cause) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* list = nullptr;
  std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &list); rc != 0) {
    cause = fmt::format("cannot resolve host: {}", gai_strerror(rc));
    return {};
  }
  Socket result;
  for (addrinfo* ai = list; ai != nullptr && !result.valid(); ai = ai->ai_next) {
    Socket s(
        ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol));
    if (!s.valid()) {
      cause = fmt::format("socket: {}", std::strerror(errno));
      continue;
    }
    int rc = ::connect(s.fd_, ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno != EINPROGRESS) {
      cause = std::strerror(errno);
      continue;
    }
    if (rc != 0) {
      IoStatus st = s.wait_for(POLLOUT, deadline);
      if (!st.ok()) {
        cause = st.code == IoStatus::Timeout ? "connect timed out" : st.describe();
        continue;
      }
      int err = 0;
      socklen_t len = sizeof err;
      ::getsockopt(s.fd_, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) {
        cause = std::strerror(err);
        continue;
      }
    }
    int one = 1;
    ::setsockopt(s.fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    result = std::move(s);
  }
  ::freeaddrinfo(list);
  return result;
}

IoStatus Socket::send_all(const void* data, std::size_t size, Clock::time_point deadline) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::send(fd_, p, size, MSG_NOSIGNAL);
    if (n > 0) {
      p += n;
      size -= static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (IoStatus st = wait_for(POLLOUT, deadline); !st.ok()) return st;
      continue;
    }
    return {IoStatus::Error, errno};
  }
  return {};
}

IoStatus Socket::recv_exact(void* data, std::size_t size, Clock::time_point deadline) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    ssize_t n = ::recv(fd_, p, size, 0);
    if (n > 0) {
      p += n;
      size -= static_cast<std::size_t>(n);
      continue;
    }
    if (n == 0) return {IoStatus::Eof};
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (IoStatus st = wait_for(POLLIN, deadline); !st.ok()) return st;
      continue;
    }
    return {IoStatus::Error, errno};
  }
  return {};
}

int accept_connection(int listen_fd, int& error) {
  int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  error = fd < 0 ? errno : 0;
  if (fd >= 0) {
    // Replies are small and already batched; Nagle would hold one back behind an ACK.
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  return fd;
}

void peer_of(int fd, std::string& addr, std::uint16_t& port) {
  sockaddr_storage peer{};
  socklen_t len = sizeof peer;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) return;
  char host[NI_MAXHOST];
  char serv[NI_MAXSERV];
  if (::getnameinfo(reinterpret_cast<sockaddr*>(&peer), len, host, sizeof host, serv, sizeof serv,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return;
  }
  addr = host;
  port = static_cast<std::uint16_t>(std::atoi(serv));
}

void close_fd(int fd) { ::close(fd); }

}  // namespace xlaunch::rendezvous
