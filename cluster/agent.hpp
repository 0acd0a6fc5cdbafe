// The multi-machine agent: how the launchers of one job find each other and stay one job.
// Everything is keys in machine 0's store under "xlaunch/<run_id>/" (docs/multi-machine.md):
//
//   arrivals                 counter; each launcher takes slot k = add(arrivals, 1)
//   arrival/<k>              that launcher's JoinRecord (machine rank, host, pid, local count,
//                            version, the settings that must agree)
//   layout                   machine 0's answer: "ok\n<local count per machine, comma-separated>
//                            \n<the job's run id>"
//                            or "error\n<exit code>\n<message>" (every launcher prints it)
//   hb/<m>                   heartbeat counter of machine m (add 1 per beat)
//   round/<r>/failure        first FailureRecord of round r (compare_set: the first one wins)
//   round/<r>/done/<m>       machine m's workers of round r have all ended
//   round/<r>/verdict        machine 0's end of round r: "ok" or the failure record
//   round/<r>/ack/<m>        machine m read the verdict (machine 0 may stop its store)
//   round/<r>/go             machine 0 emptied the store for round r >= 1; start workers
//
// Elastic jobs (--nnodes MIN:MAX) replace layout, go and hb/<m> by round/<r>/layout (the
// layout plus "\n<arrival slot per machine rank>"), latest (newest round), hb/s<slot>,
// refused/<slot> and closed (membership.hpp, store_members.cpp, store_join.cpp).
//
// Machine 0 decides the layout and the verdicts; the others only follow, so every launcher
// prints the same text. This file: the records and decisions, pure (unit-tested); their
// encoding and the checks of what is read back are record_codec.hpp; the interface to a
// backend is join_backend.hpp, the store's side store_backend.hpp.
#pragma once

#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "launcher/failure_record.hpp"

namespace xlaunch::cluster {

using launcher::FailureRecord;

/// What one launcher tells the others when it joins.
struct JoinRecord {
  int machine_rank = 0;
  std::string host;
  long pid = 0;
  int local_processes = 1;
  std::string version;
  /// "key=value" lines of the settings every machine must agree on (see agreed_settings).
  std::string settings;
};

/// The job's shape once every machine joined.
struct Layout {
  std::vector<int> local_processes;  // per machine rank
  /// Machine 0's run id, the job's on every machine (TORCHELASTIC_RUN_ID, log folders).
  std::string run_id;
  /// Elastic jobs: the arrival slot of each machine rank (which launcher is which rank).
  std::vector<int> slots;
  int world_size() const;
  /// RANK of machine m's local rank 0: the sum of the lower machines' local counts.
  int rank_offset(int machine_rank) const;
};

/// A join that cannot go on: the message names machines and the difference.
struct JoinProblem {
  int exit_code = 2;  // 2: the launchers disagree (configuration); 1: a machine is missing
  std::string message;
};

/// Machine 0's decision over the first num_machines arrivals (in arrival order). Checks
/// ranks (in range, no duplicates, none missing), versions, the agreed settings and, when
/// `total_processes` is set, that the local counts add up to it. Pure.
std::variant<Layout, JoinProblem> decide_layout(const std::vector<JoinRecord>& arrivals,
                                                int num_machines,
                                                std::optional<int> total_processes);

/// Gives each launcher that came without a machine rank (-1: a c10d launcher that found the
/// endpoint's port taken and joined) a rank no arrival claims, lowest first, in arrival
/// order. Machine 0 and the others run it on the same arrivals, so they agree. Pure.
void assign_unclaimed_ranks(std::vector<JoinRecord>& arrivals, int num_machines);

/// The message for machines that did not arrive before --rdzv_timeout. `unwritten_slots`:
/// arrival slots a client took (the counter says so) but never wrote a record in. Pure.
JoinProblem missing_machines(const std::vector<JoinRecord>& arrived, int num_machines,
                             std::chrono::milliseconds timeout,
                             const std::vector<int>& unwritten_slots = {});

/// Settings every machine must agree on, as sorted "key=value" lines.
std::string agreed_settings(const std::vector<std::pair<std::string, std::string>>& values);

}  // namespace xlaunch::cluster
