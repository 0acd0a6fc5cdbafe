// Whether a host name or address is this machine: what decides, for --rdzv_endpoint, which
// launcher hosts the store.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "config/launch_rules.hpp"

namespace xlaunch::config {
namespace {

std::string numeric(const sockaddr* address) {
  char text[NI_MAXHOST] = {};
  const socklen_t size =
      address->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  if (::getnameinfo(address, size, text, sizeof text, nullptr, 0, NI_NUMERICHOST) != 0) return {};
  std::string out = text;
  if (const auto percent = out.find('%'); percent != std::string::npos) out.resize(percent);
  return out;
}

bool is_loopback(const sockaddr* address) {
  if (address->sa_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(address);
    return (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
  }
  if (address->sa_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(address);
    return IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr);
  }
  return false;
}

}  // namespace

bool is_local_host(const std::string& host) {
  if (host == "localhost") return true;
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) == 0) {
    const std::string self = name;
    if (host == self || host == self.substr(0, self.find('.'))) return true;
  }
  std::vector<std::string> mine;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) == 0) {
    for (const ifaddrs* it = list; it != nullptr; it = it->ifa_next) {
      if (it->ifa_addr == nullptr) continue;
      if (it->ifa_addr->sa_family != AF_INET && it->ifa_addr->sa_family != AF_INET6) continue;
      mine.push_back(numeric(it->ifa_addr));
    }
    ::freeifaddrs(list);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) return false;
  bool local = false;
  for (const addrinfo* it = found; it != nullptr && !local; it = it->ai_next) {
    if (is_loopback(it->ai_addr)) {
      local = true;
      break;
    }
    const std::string address = numeric(it->ai_addr);
    for (const std::string& own : mine) local = local || (!address.empty() && address == own);
  }
  ::freeaddrinfo(found);
  return local;
}

}  // namespace xlaunch::config
