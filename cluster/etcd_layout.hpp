// The etcd join's keys and decisions, pure (unit-tested). Keys of one job live under
// "/xlaunch/<run_id>/" (docs/multi-machine.md, "## etcd"):
//
//   members/<lease>      a launcher's JoinRecord and run id, on its lease: it vanishes when the
//   launcher
//                        exits (revoke) or stops renewing (crash, SIGKILL, lost network)
//   layout               the job, decided once (create-if-absent txn) by the first launcher
//                        to see enough members: "members <lease> ...", "hosts <host> ...",
//                        "ports <port> ..." in rank order, then the agent's encoded layout
//                        (or the join's error)
//   round/<r>/failure    the round's first failure (create-if-absent: the first one wins)
//   round/<r>/done/<m>   machine m's workers of round r have all ended
//   round/<r>/verdict    "ok" or the failure, written once by the first launcher that sees
//                        every machine done or lost
//   round/<r>/go         round r >= 1 may start (machine 0 emptied the workers' store)
//   round/<r>/layout     elastic jobs: round r's members, decided (create-if-absent) by the
//                        first arrival (round 0) or the last round's first survivor, in the
//                        layout's format; it replaces `layout`
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "cluster/agent.hpp"
#include "cluster/etcd_codec.hpp"
#include "cluster/record_codec.hpp"

namespace xlaunch::cluster::etcd {

/// "/xlaunch/<run_id>/<suffix>".
std::string job_key(std::string_view run_id, std::string_view suffix);
std::string member_key(std::string_view run_id, std::int64_t lease);
std::string round_key(std::string_view run_id, int round, std::string_view suffix);

/// A registered launcher: its lease and record, in arrival order (create_revision).
struct Member {
  std::int64_t lease = 0;
  std::int64_t create_revision = 0;
  JoinRecord record;
  std::string job_run_id;  // the launcher's own run id: rank 0's becomes the job's
  int store_port = 0;      // the port its workers' store would listen on, were it rank 0
};

/// A members/ value: "job_run_id=" and "store_port=" lines, then the JoinRecord.
std::string encode_member(const JoinRecord& record, std::string_view job_run_id, int store_port);
/// Fills record, job_run_id (a valid run id) and store_port (1..65535); throws
/// MalformedRecord naming `key` when malformed (record_codec.hpp).
void decode_member(std::string_view text, std::string_view key, Member& into);

/// The lease a members/ key names; nullopt for a key that is not one.
std::optional<std::int64_t> lease_of_member_key(std::string_view run_id, std::string_view key);

/// The members/ entries among `kvs` (a listing of the job's keys), in listing order; other
/// keys are skipped. Throws MalformedRecord for a malformed member record.
std::vector<Member> decode_members(std::string_view run_id, const std::vector<KeyValue>& kvs);

/// The job etcd agreed on: members' leases in rank order and the layout (or the problem
/// every launcher reports).
struct Decision {
  std::vector<std::int64_t> leases;           // rank order
  std::variant<Layout, JoinProblem> outcome;  // Layout.local_processes in rank order
  std::vector<std::string> hosts;             // rank order: rank 0's host runs the store
  std::vector<int> ports;                     // rank order: their store ports
};

/// Decides the job from the members present, or nullopt while fewer than num_machines are.
/// The first num_machines by arrival form the job. Machine ranks: the ones given
/// (--machine_rank, checked like the store's join: in range, no duplicates) when every
/// member gave one; arrival order when none did (machine_rank -1); a mix is a problem.
std::optional<Decision> decide(std::vector<Member> members, int num_machines,
                               std::optional<int> total_processes);

/// The machine rank `lease` has in `decision`; nullopt when the job formed without it.
std::optional<int> rank_of(const Decision& decision, std::int64_t lease);

/// The first of `leases` (rank order) still `alive`: who decides the next round. nullopt when
/// none is (a layout left by an earlier job whose launchers are all gone).
std::optional<std::int64_t> first_alive(const std::vector<std::int64_t>& leases,
                                        const std::set<std::int64_t>& alive);

std::string encode(const Decision& decision);
/// Throws MalformedRecord naming `key` for a value that is not a Decision: leases > 0 and
/// distinct, hosts printable, ports 1..65535, a layout as decode_layout checks it, one lease,
/// host and port per machine.
Decision decode_decision(std::string_view text, std::string_view key);
/// A decision's layout has the machines this job may have: exactly `num_machines` (fixed
/// jobs), or 1..`max_machines` (elastic jobs, num_machines 0).
void check_decision(const Decision& decision, int num_machines, int max_machines,
                    std::string_view key);

// --- elastic jobs (--nnodes MIN:MAX): one layout per round, round/<r>/layout -------------

/// An elastic round's decision from `chosen` in rank order: ranks 0..n-1, checked like a
/// fixed job's layout, the job's run id `run_id` (the first round's rank 0's).
Decision elastic_decision(const std::vector<Member>& chosen, const std::string& run_id);

/// Who is in elastic round r >= 1: the last round's members still registered, in their order
/// (its rank 0 keeps the workers' store while it lives), then newcomers by arrival, up to
/// max_machines; `lost`: the hosts of the last round's members gone.
struct NextRound {
  std::vector<Member> members;
  std::vector<JoinRecord> lost;
};
NextRound next_round(const Decision& previous, std::vector<Member> present, int max_machines);

/// The newest round with a layout among `keys` (round/<r>/... keys of the job); nullopt
/// when none.
std::optional<int> latest_layout_round(std::string_view run_id,
                                       const std::vector<std::string>& keys);

/// The message when too few launchers joined in time.
JoinProblem too_few(const std::vector<Member>& members, int num_machines,
                    std::string_view endpoints, std::chrono::milliseconds timeout);

}  // namespace xlaunch::cluster::etcd
