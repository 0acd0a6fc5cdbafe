// ListeningSocket: the only place the server side calls socket()/bind()/listen().
#include <fmt/core.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "rendezvous/store_error.hpp"
#include "rendezvous/store_server.hpp"

namespace xlaunch::rendezvous {
namespace {

// listen() clamps this to net.core.somaxconn; asking for more honours a raised sysctl.
constexpr int kBacklog = 65535;

std::uint16_t bound_port(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return 0;
  if (addr.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
}

// Returns the fd, or -1 with `cause` set (and `in_use` when the address is taken).
int try_bind(const addrinfo& ai, bool dual_stack, std::string& cause, bool& in_use) {
  int fd = ::socket(ai.ai_family, ai.ai_socktype | SOCK_CLOEXEC, ai.ai_protocol);
  if (fd < 0) {
    cause = fmt::format("socket: {}", std::strerror(errno));
    return -1;
  }
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (ai.ai_family == AF_INET6) {
    int v6only = dual_stack ? 0 : 1;
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only);
  }
  if (::bind(fd, ai.ai_addr, ai.ai_addrlen) != 0) {
    in_use = in_use || errno == EADDRINUSE;
    cause = fmt::format("bind: {}", std::strerror(errno));
    ::close(fd);
    return -1;
  }
  if (::listen(fd, kBacklog) != 0) {
    cause = fmt::format("listen: {}", std::strerror(errno));
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

ListeningSocket ListeningSocket::bind(const std::string& host, std::uint16_t port) {
  const bool any = host.empty() || host == "::";
  const std::string service = std::to_string(port);
  std::string shown = fmt::format("{}:{}", host.empty() ? "::" : host, port);
  std::string causes;
  bool in_use = false;

  // "All interfaces" tries [::] dual-stack first and falls back to 0.0.0.0 (no IPv6).
  const char* candidates[] = {any ? "::" : host.c_str(), any ? "0.0.0.0" : nullptr};
  for (const char* node : candidates) {
    if (node == nullptr) continue;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* list = nullptr;
    if (int rc = ::getaddrinfo(node, service.c_str(), &hints, &list); rc != 0) {
      causes += fmt::format("{}resolve {}: {}", causes.empty() ? "" : "; ", node, gai_strerror(rc));
      continue;
    }
    for (addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
      std::string cause;
      int fd = try_bind(*ai, any, cause, in_use);
      if (fd >= 0) {
        ::freeaddrinfo(list);
        return ListeningSocket(fd, bound_port(fd));
      }
      causes += fmt::format("{}{}", causes.empty() ? "" : "; ", cause);
    }
    ::freeaddrinfo(list);
  }
  std::string message = fmt::format(
      "cannot listen on {}: {} (pick another port, or 0 for a free one)", shown, causes);
  if (in_use) throw AddressInUse(message);
  throw StoreError(message);
}

ListeningSocket::ListeningSocket(ListeningSocket&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), port_(other.port_) {}

ListeningSocket& ListeningSocket::operator=(ListeningSocket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    port_ = other.port_;
  }
  return *this;
}

ListeningSocket::~ListeningSocket() {
  if (fd_ >= 0) ::close(fd_);
}

int ListeningSocket::release() { return std::exchange(fd_, -1); }

std::optional<std::uint64_t> raise_open_file_limit() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return std::nullopt;
  if (lim.rlim_cur < lim.rlim_max) {
    const rlim_t before = lim.rlim_cur;
    lim.rlim_cur = lim.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &lim) != 0) lim.rlim_cur = before;
  }
  if (lim.rlim_cur == RLIM_INFINITY) return std::nullopt;
  return static_cast<std::uint64_t>(lim.rlim_cur);
}

}  // namespace xlaunch::rendezvous
