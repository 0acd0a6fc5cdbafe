#include "cluster/blame.hpp"

#include <fmt/format.h>

#include "cluster/membership.hpp"
#include "cluster/seconds.hpp"
#include "launcher/exit_status.hpp"
#include "launcher/report.hpp"

namespace xlaunch::cluster {

namespace {

FailureRecord fatal(int machine_rank, const std::string& host, int exit_code, std::string cause) {
  FailureRecord r;
  r.machine_rank = machine_rank;
  r.host = host;
  r.exit_code = exit_code;
  r.restartable = false;
  r.cause = std::move(cause);
  return r;
}

FailureRecord launcher_lost(int machine_rank, const std::string& host, std::string cause,
                            std::chrono::milliseconds heartbeat_timeout, bool elastic) {
  if (elastic) return machine_left(machine_rank, host, heartbeat_timeout);
  return fatal(machine_rank, host, 1, std::move(cause));
}

}  // namespace

std::string host_of(const std::vector<std::string>& hosts, int machine_rank) {
  return machine_rank >= 0 && machine_rank < static_cast<int>(hosts.size()) ? hosts[machine_rank]
                                                                            : "?";
}

FailureRecord heartbeat_lost(int machine_rank, const std::string& host,
                             std::chrono::milliseconds heartbeat_timeout, bool elastic) {
  return launcher_lost(machine_rank, host,
                       fmt::format("launcher lost: no heartbeat for {:g}s (--heartbeat_timeout)",
                                   seconds(heartbeat_timeout)),
                       heartbeat_timeout, elastic);
}

FailureRecord lease_lost(int machine_rank, const std::string& host,
                         std::chrono::milliseconds heartbeat_timeout, bool elastic) {
  return launcher_lost(
      machine_rank, host,
      fmt::format("launcher lost: its etcd lease expired (--heartbeat_timeout {:g}s)",
                  seconds(heartbeat_timeout)),
      heartbeat_timeout, elastic);
}

FailureRecord own_lease_expired(int machine_rank, const std::string& host) {
  return fatal(machine_rank, host, 1,
               "this launcher's etcd lease expired (was it stopped or cut off for longer "
               "than --heartbeat_timeout?)");
}

FailureRecord store_unreachable(const std::string& machine0_host, const std::string& store_host,
                                int store_port, std::chrono::milliseconds heartbeat_timeout) {
  return fatal(
      0, machine0_host, 1,
      fmt::format("launcher lost: its store at {}:{} is unreachable (--heartbeat_timeout {:g}s)",
                  store_host, store_port, seconds(heartbeat_timeout)));
}

FailureRecord etcd_unreachable(int machine_rank, const std::string& host,
                               const std::string& endpoints,
                               std::chrono::milliseconds heartbeat_timeout,
                               const std::string& why) {
  return fatal(machine_rank, host, 1,
               fmt::format("etcd at {} unreachable for --heartbeat_timeout {:g}s ({})", endpoints,
                           seconds(heartbeat_timeout), why));
}

JoinProblem late_duplicate(const JoinRecord& newcomer, const std::optional<JoinRecord>& holder,
                           std::string_view run_id) {
  return JoinProblem{
      2, fmt::format("the job with run id '{}' already runs with machine rank {}{}; this launcher "
                     "({}, pid {}) was not taken in, and the job goes on. Give each machine its "
                     "own --machine_rank, or this job its own --rdzv_id",
                     run_id, newcomer.machine_rank,
                     holder ? fmt::format(" on {} (pid {})", holder->host, holder->pid) : "",
                     newcomer.host, newcomer.pid)};
}

JoinProblem join_interrupted(const JoinRecord& who, int signal) {
  const std::string launcher = who.machine_rank >= 0
                                   ? fmt::format("machine {} ({})", who.machine_rank, who.host)
                                   : fmt::format("{} (pid {})", who.host, who.pid);
  return JoinProblem{exit_status::kSignalBase + signal,
                     fmt::format("{}: launcher interrupted by {} while joining the job", launcher,
                                 launcher::signal_name(signal))};
}

}  // namespace xlaunch::cluster
