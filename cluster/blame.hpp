// What a round's failure says when no worker is to blame (a launcher or the join backend
// lost, a machine rank claimed twice). Both join backends publish these, so that every
// launcher prints the same words. Pure (unit-tested).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/record_codec.hpp"

namespace xlaunch::cluster {

/// Machine `machine_rank`'s host, or "?" when the rank is not in `hosts` (yet).
std::string host_of(const std::vector<std::string>& hosts, int machine_rank);

/// Another launcher stopped showing that it lives: a fixed job ends (not restartable), an
/// elastic one re-forms without it (machine_left). The store backend's way to see it: the
/// host read the same heartbeat count for too long.
FailureRecord heartbeat_lost(int machine_rank, const std::string& host,
                             std::chrono::milliseconds heartbeat_timeout, bool elastic);
/// The etcd backend's way to see it: the launcher's lease expired.
FailureRecord lease_lost(int machine_rank, const std::string& host,
                         std::chrono::milliseconds heartbeat_timeout, bool elastic);

/// This launcher's own etcd lease expired (stopped or cut off too long).
FailureRecord own_lease_expired(int machine_rank, const std::string& host);
/// Machine 0's store (at store_host:store_port) cannot be reached: the same words on every
/// machine, whatever each one's error was.
FailureRecord store_unreachable(const std::string& machine0_host, const std::string& store_host,
                                int store_port, std::chrono::milliseconds heartbeat_timeout);
/// etcd (at `endpoints`) unreachable for heartbeat_timeout; `why` is the last error.
FailureRecord etcd_unreachable(int machine_rank, const std::string& host,
                               const std::string& endpoints,
                               std::chrono::milliseconds heartbeat_timeout, const std::string& why);
/// A launcher (`newcomer`) came after a fixed job formed, claiming the machine rank that
/// `holder` has in it: it is refused (exit 2) and the job goes on.
JoinProblem late_duplicate(const JoinRecord& newcomer, const std::optional<JoinRecord>& holder,
                           std::string_view run_id);
/// A launcher (`who`) got a stop signal (Ctrl-C) while the machines joined: the job does not
/// form, and every launcher exits 128+signal with these words, as when one is interrupted
/// mid-run.
JoinProblem join_interrupted(const JoinRecord& who, int signal);

}  // namespace xlaunch::cluster
