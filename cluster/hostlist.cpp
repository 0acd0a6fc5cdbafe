#include "cluster/hostlist.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "config/text.hpp"

namespace xlaunch::cluster {

using config::parse_int;
using config::split;
using config::trim;

namespace {

// No real allocation is this large; a typo like [1-99999999] must not exhaust memory.
constexpr std::size_t kMaxHosts = 1'000'000;

std::vector<std::string> expand_bracket(std::string_view body, std::string_view whole) {
  std::vector<std::string> out;
  for (std::string_view item : split(body, ',')) {
    item = trim(item);
    auto dash = item.find('-');
    std::string_view lo_text = item.substr(0, dash);
    std::string_view hi_text = dash == std::string_view::npos ? lo_text : item.substr(dash + 1);
    auto digits = [](std::string_view t) {
      return !t.empty() && t.size() <= 9 &&
             t.find_first_not_of("0123456789") == std::string_view::npos;
    };
    if (!digits(lo_text) || !digits(hi_text)) {
      throw std::invalid_argument(
          fmt::format("hostlist '{}': '{}' is not a number or a range like 01-04", whole, item));
    }
    int lo = 0, hi = 0;
    parse_int(lo_text, lo);
    parse_int(hi_text, hi);
    if (hi < lo) {
      throw std::invalid_argument(
          fmt::format("hostlist '{}': range '{}' runs backwards", whole, item));
    }
    if (static_cast<std::size_t>(hi - lo) >= kMaxHosts) {
      throw std::invalid_argument(
          fmt::format("hostlist '{}': range '{}' is too large", whole, item));
    }
    for (int n = lo; n <= hi; ++n) out.push_back(fmt::format("{:0{}d}", n, lo_text.size()));
  }
  return out;
}

std::vector<std::string> expand_one(std::string_view name, std::string_view whole) {
  std::vector<std::string> hosts{""};
  std::size_t i = 0;
  while (i < name.size()) {
    std::size_t open = name.find('[', i);
    std::string_view literal =
        name.substr(i, open == std::string_view::npos ? name.npos : open - i);
    if (literal.find(']') != std::string_view::npos) {
      throw std::invalid_argument(fmt::format("hostlist '{}': ']' without '['", whole));
    }
    for (std::string& h : hosts) h += literal;
    if (open == std::string_view::npos) break;
    std::size_t close = name.find(']', open);
    if (close == std::string_view::npos) {
      throw std::invalid_argument(fmt::format("hostlist '{}': '[' without ']'", whole));
    }
    std::vector<std::string> parts = expand_bracket(name.substr(open + 1, close - open - 1), whole);
    if (hosts.size() * parts.size() > kMaxHosts) {
      throw std::invalid_argument(fmt::format("hostlist '{}' names too many hosts", whole));
    }
    std::vector<std::string> next;
    next.reserve(hosts.size() * parts.size());
    for (const std::string& h : hosts) {
      for (const std::string& p : parts) next.push_back(h + p);
    }
    hosts = std::move(next);
    i = close + 1;
  }
  return hosts;
}

}  // namespace

std::vector<std::string> expand_hostlist(std::string_view hostlist) {
  std::vector<std::string> hosts;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= hostlist.size(); ++i) {
    const char c = i < hostlist.size() ? hostlist[i] : ',';
    if (c == '[' && ++depth > 1) {
      throw std::invalid_argument(fmt::format("hostlist '{}': nested '['", hostlist));
    }
    if (c == ']') --depth;
    if (c == ',' && depth <= 0) {
      std::string_view name = trim(hostlist.substr(start, i - start));
      start = i + 1;
      if (name.empty()) continue;
      for (std::string& h : expand_one(name, hostlist)) hosts.push_back(std::move(h));
      if (hosts.size() > kMaxHosts) {
        throw std::invalid_argument(fmt::format("hostlist '{}' names too many hosts", hostlist));
      }
    }
  }
  if (depth != 0)
    throw std::invalid_argument(fmt::format("hostlist '{}': '[' without ']'", hostlist));
  return hosts;
}

}  // namespace xlaunch::cluster
