#include "diagnose/stall_dial.hpp"

#include <fmt/format.h>

#include <charconv>

#include "diagnose/proc_net.hpp"
#include "diagnose/safe_text.hpp"

namespace xlaunch::diagnose {

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0 ||
         host.rfind("::ffff:127.", 0) == 0;
}

namespace {
bool same_host(const std::string& a, const std::string& b) {
  return a == b || (is_loopback(a) && is_loopback(b));
}

// "[::1]:80" / "127.0.0.1:80" -> host, port.
bool split_endpoint(const std::string& ep, std::string& host, std::string& port) {
  const auto colon = ep.rfind(':');
  if (colon == std::string::npos) return false;
  host = ep.substr(0, colon);
  port = ep.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return true;
}

// The script's MASTER_PORT as a port, or nullopt: the rank wrote that text, and a value no
// TCPStore could dial ("auto", "${PORT}", 70000) is no evidence of where it dials.
std::optional<std::uint16_t> port_value(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value == 0 ||
      value > 65535) {
    return std::nullopt;
  }
  return static_cast<std::uint16_t>(value);
}

// A host name or address as the script could have meant one: printable ASCII, no spaces,
// at most a DNS name's length. Anything else is not shown as where the rank dials.
bool plausible_host(std::string_view host) {
  if (host.empty() || host.size() > 255) return false;
  for (unsigned char c : host) {
    if (c <= 0x20 || c >= 0x7f) return false;
  }
  return true;
}
}  // namespace

std::optional<std::string> wrong_target(const DialEvidence& e, const std::string& store_addr,
                                        std::uint16_t store_port) {
  const std::string port = std::to_string(store_port);
  for (const std::string& ep : e.connecting) {
    std::string host;
    std::string p;
    if (!split_endpoint(ep, host, p)) continue;
    if (p != port || !same_host(host, store_addr)) return ep;
  }
  // A refused connect leaves no row in the tables; the script's own setting says where.
  if (e.unlisted_sockets > 0 && (e.script_addr || e.script_port)) {
    const std::string host = e.script_addr.value_or(store_addr);
    const std::optional<std::uint16_t> p =
        e.script_port ? port_value(*e.script_port) : std::optional(store_port);
    if (!p || !plausible_host(host)) return std::nullopt;
    if (*p != store_port || !same_host(host, store_addr)) return endpoint(host, *p);
  }
  return std::nullopt;
}

std::string wrong_address_message(int rank, const std::string& target,
                                  const std::string& store_addr, std::uint16_t store_port,
                                  bool script_set_it) {
  return fmt::format(
      "xlaunch: rank {} keeps dialing {}, but the store is at {} and has not heard from it{}.\n"
      "xlaunch:   fix: let xlaunch set MASTER_ADDR and MASTER_PORT: remove the lines that set "
      "them, or set them only when absent (os.environ.setdefault(\"MASTER_PORT\", ...)); or "
      "launch with --main_process_port {} so that the store listens where the script dials\n",
      rank, escape_controls(target, false), endpoint(store_addr, store_port),
      script_set_it ? " (the script sets MASTER_ADDR/MASTER_PORT itself)" : "",
      escape_controls(target.substr(target.rfind(':') + 1), false));
}

}  // namespace xlaunch::diagnose
