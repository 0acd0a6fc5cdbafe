#include "config/torchrun_values.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <csignal>
#include <utility>

#include "config/schema.hpp"
#include "config/text.hpp"
#include "config/usage_error.hpp"

namespace xlaunch::config {
namespace {

std::optional<double> seconds(std::string_view text) {
  const auto value = parse_number(text);
  if (!value || !std::isfinite(*value) || *value <= 0 || *value > kMaxSeconds) return std::nullopt;
  return value;
}

std::string format_seconds(double value) {
  if (std::floor(value) == value) return fmt::format("{}", static_cast<long long>(value));
  return fmt::format("{}", value);
}

// Catchable signals a job scheduler might send (SLURM sends SIGUSR1/2 before a time limit).
constexpr std::pair<std::string_view, int> kSignals[] = {
    {"SIGHUP", SIGHUP},   {"SIGINT", SIGINT},   {"SIGQUIT", SIGQUIT}, {"SIGTERM", SIGTERM},
    {"SIGUSR1", SIGUSR1}, {"SIGUSR2", SIGUSR2}, {"SIGALRM", SIGALRM}, {"SIGCONT", SIGCONT},
    {"SIGTSTP", SIGTSTP}, {"SIGXCPU", SIGXCPU}, {"SIGPWR", SIGPWR},   {"SIGWINCH", SIGWINCH}};

}  // namespace

std::optional<MachineRange> parse_nnodes(std::string_view text, int max_machines) {
  const std::vector<std::string_view> parts = split(trim(text), ':');
  if (parts.size() > 2) return std::nullopt;
  const auto low = parse_integer(parts.front());
  const auto high = parse_integer(parts.back());
  if (!low || !high || *low < 1 || *low > *high || *high > max_machines) return std::nullopt;
  return MachineRange{static_cast<int>(*low), static_cast<int>(*high)};
}

std::optional<std::string> parse_nproc_device(std::string_view text) {
  const std::string t = lower(trim(text));
  if (t == "auto" || t == "gpu" || t == "cpu") return t;
  return std::nullopt;
}

int count_for_nproc_device(std::string_view device, const std::vector<std::string>& gpus,
                           int cpus) {
  if (device == "gpu") {
    if (gpus.empty()) {
      throw UsageError(
          "--nproc_per_node gpu: no GPU is visible to this launcher (GPUs found: none)",
          "check nvidia-smi and CUDA_VISIBLE_DEVICES, or use --nproc_per_node cpu / N for CPU "
          "workers");
    }
    return static_cast<int>(gpus.size());
  }
  if (device == "auto" && !gpus.empty()) return static_cast<int>(gpus.size());
  return std::max(1, cpus);
}

std::optional<Endpoint> parse_endpoint(std::string_view text) {
  text = trim(text);
  Endpoint out;
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    out.host = std::string(text.substr(1, close - 1));
    std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return std::nullopt;
      port_text = rest.substr(1);
      out.port_given = true;
    }
  } else {
    const std::size_t colon = text.rfind(':');
    // More than one colon without brackets is a bare IPv6 address, taken without a port.
    if (colon != std::string_view::npos && text.find(':') == colon) {
      out.host = std::string(text.substr(0, colon));
      port_text = text.substr(colon + 1);
      out.port_given = true;
    } else {
      out.host = std::string(text);
    }
  }
  if (out.host.empty() || std::any_of(out.host.begin(), out.host.end(), [](unsigned char c) {
        return std::isspace(c) || c == '/' || c == ',' || c == '[' || c == ']';
      })) {
    return std::nullopt;
  }
  if (out.port_given) {
    const auto port = parse_integer(port_text);
    // 0 is torchrun's "a free port" (its --standalone is --rdzv_endpoint localhost:0).
    if (!port || *port < 0 || *port > 65535) return std::nullopt;
    out.port = static_cast<int>(*port);
  }
  return out;
}

bool parse_rdzv_conf(std::string_view text, Settings& into, std::string& problem,
                     std::vector<std::string>* ignored) {
  Settings out = into;
  for (std::string_view item : split(text, ',')) {
    item = trim(item);
    if (item.empty()) continue;  // torchrun tolerates "a=1,"
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      problem = fmt::format("'{}' is not key=value", std::string(item));
      return false;
    }
    const std::string key = lower(trim(item.substr(0, eq)));
    const std::string_view value = trim(item.substr(eq + 1));
    auto need_seconds = [&](std::optional<double>& field) {
      const auto v = seconds(value);
      if (!v) problem = fmt::format("{}: '{}' is not seconds > 0", key, std::string(value));
      field = v;
      return v.has_value();
    };
    if (key == "join_timeout" || key == "timeout") {
      if (!need_seconds(out.rdzv_timeout)) return false;
    } else if (key == "last_call_timeout") {
      if (!need_seconds(out.rdzv_last_call_timeout)) return false;
    } else if (key == "close_timeout") {
      if (!need_seconds(out.rdzv_close_timeout)) return false;
    } else if (key == "read_timeout") {
      if (!need_seconds(out.rdzv_read_timeout)) return false;
    } else if (key == "is_host") {
      const auto v = parse_boolean(value);
      if (!v) {
        problem = fmt::format("is_host: '{}' is not true or false", std::string(value));
        return false;
      }
      out.rdzv_is_host = v;
    } else if ((key == "protocol" && lower(value) != "http") || key == "cacert" || key == "cert" ||
               key == "key") {
      problem = fmt::format(
          "{}: etcd over TLS is not supported (xlaunch's etcd client speaks plain http)", key);
      return false;
    } else if (ignored != nullptr) {
      // torchrun's backends read the keys they know and ignore the rest (store_type,
      // use_libuv, keep_alive_interval, ... have no use here).
      ignored->push_back(fmt::format("{}={}", key, std::string(value)));
    }
  }
  into = std::move(out);
  return true;
}

std::optional<std::string> format_rdzv_conf(const Settings& from) {
  std::vector<std::string> items;
  if (from.rdzv_last_call_timeout) {
    items.push_back("last_call_timeout=" + format_seconds(*from.rdzv_last_call_timeout));
  }
  if (from.rdzv_close_timeout) {
    items.push_back("close_timeout=" + format_seconds(*from.rdzv_close_timeout));
  }
  if (from.rdzv_read_timeout) {
    items.push_back("read_timeout=" + format_seconds(*from.rdzv_read_timeout));
  }
  if (from.rdzv_is_host) items.push_back(*from.rdzv_is_host ? "is_host=true" : "is_host=false");
  if (items.empty()) return std::nullopt;
  return fmt::format("{}", fmt::join(items, ","));
}

std::optional<std::string> normalize_signal_list(std::string_view text) {
  std::vector<std::string> names;
  for (std::string_view item : split(text, ',')) {
    std::string name = upper(trim(item));
    if (name.empty()) return std::nullopt;
    if (!name.starts_with("SIG")) name = "SIG" + name;
    if (!signal_number(name)) return std::nullopt;
    names.push_back(std::move(name));
  }
  return fmt::format("{}", fmt::join(names, ","));
}

std::vector<std::string> unhandled_signals(std::string_view normalized) {
  std::vector<std::string> out;
  const std::vector<std::string_view> handled = split(kHandledSignals, ',');
  for (std::string_view name : split(normalized, ',')) {
    if (std::find(handled.begin(), handled.end(), name) == handled.end()) {
      out.emplace_back(name);
    }
  }
  return out;
}

std::optional<int> signal_number(std::string_view name) {
  for (const auto& [known, number] : kSignals) {
    if (known == name) return number;
  }
  return std::nullopt;
}

std::optional<std::string> parse_numa_binding(std::string_view text) {
  const std::string t = lower(trim(text));
  if (t == "node" || t == "socket" || t == "exclusive" || t == "core-complex") return t;
  return std::nullopt;
}

}  // namespace xlaunch::config
