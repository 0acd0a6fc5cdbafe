#include "config/join_settings.hpp"

#include <fmt/format.h>

#include <cmath>

#include "config/usage_error.hpp"

namespace xlaunch::config {
namespace {

double seconds_setting(const std::optional<double>& value, const char* flag, double fallback) {
  double v = value.value_or(fallback);
  if (!(v > 0) || !std::isfinite(v)) {
    throw UsageError(fmt::format("{} must be a number of seconds > 0 (got {})", flag, v));
  }
  return v;
}

std::chrono::milliseconds ms(double seconds) {
  return std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
}

}  // namespace

JoinSettings join_settings(const Settings& s) {
  JoinSettings join;
  join.elastic = s.min_machines && s.max_machines && *s.min_machines < *s.max_machines;
  if (join.elastic) {
    join.min_machines = *s.min_machines;
    join.max_machines = *s.max_machines;
  }
  join.hosts_elastic_store = s.machine_rank ? *s.machine_rank == 0 : !s.main_process_ip;
  join.etcd = s.rdzv_backend && s.rdzv_backend->starts_with("etcd");
  join.host_or_join = s.rdzv_host_guessed.value_or(false) && !join.etcd;
  join.rdzv_id = s.rdzv_id.value_or("default");
  if (s.num_processes && !s.nproc_per_node) join.total_processes = s.num_processes;
  return join;
}

std::string etcd_endpoint(const Settings& s) {
  if (!s.main_process_ip || s.main_process_ip->empty()) {
    throw UsageError("--rdzv_backend etcd needs etcd's address",
                     "give --main_process_ip (--master_addr) HOST and --main_process_port "
                     "PORT (default 2379) of an etcd member");
  }
  const int port = s.main_process_port.value_or(0);
  const std::string& ip = *s.main_process_ip;
  const bool v6 = ip.find(':') != std::string::npos;  // an IPv6 address needs brackets
  return fmt::format("{}{}{}:{}", v6 ? "[" : "", ip, v6 ? "]" : "", port == 0 ? 2379 : port);
}

JoinTimeouts join_timeouts(const Settings& s) {
  JoinTimeouts t;
  const double rdzv = seconds_setting(s.rdzv_timeout, "--rdzv_timeout", 900);
  const double heartbeat = seconds_setting(s.heartbeat_timeout, "--heartbeat_timeout", 30);
  t.rdzv = ms(rdzv);
  t.heartbeat = ms(heartbeat);
  t.last_call = ms(s.rdzv_last_call_timeout.value_or(30));
  t.heartbeat_seconds = heartbeat;
  return t;
}

}  // namespace xlaunch::config
