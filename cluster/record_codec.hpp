// The launchers' records as the store and etcd carry them ("key=value" lines), and the
// checks every launcher applies to what it reads back. The store has no authentication (as
// PyTorch's) and etcd is shared, so every value read is untrusted input: a decoder either
// returns a record whose numbers are in range and whose texts are printable, or throws
// MalformedRecord naming the key (docs/multi-machine.md, "What every launcher checks").
// Pure; fuzzed by cluster/record_fuzz.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "cluster/agent.hpp"
#include "launcher/capacity.hpp"

namespace xlaunch::cluster {

/// A value that is not a well-formed xlaunch record. what(): "malformed record KEY: PROBLEM".
class MalformedRecord : public std::invalid_argument {
 public:
  MalformedRecord(std::string_view key, std::string_view problem);
  const std::string& key() const { return key_; }
  const std::string& problem() const { return problem_; }

 private:
  std::string key_;
  std::string problem_;
};

/// Bounds every record is checked against, whatever the job.
inline constexpr int kMaxMachines = 1 << 16;                           // as --num_machines
inline constexpr int kMaxLocalProcesses = launcher::kMaxLocalWorkers;  // per machine
inline constexpr std::int64_t kMaxArrivals = 1 << 20;                  // launchers under one run id
inline constexpr std::size_t kMaxNameBytes = 255;                      // a host name, a version
inline constexpr std::size_t kMaxTextBytes = 64 * 1024;                // a cause, a message

/// Texts in records are one line of printable characters: control characters become blanks.
std::string flat(std::string_view text);

std::string encode(const JoinRecord& record);
/// Machine rank -1 (by arrival) to kMaxMachines-1, pid >= 0, local count 1..kMaxLocalProcesses,
/// host and version printable, every other line "s.NAME=VALUE".
JoinRecord decode_join(std::string_view text, std::string_view key);

std::string encode_layout(const std::variant<Layout, JoinProblem>& decision);
/// "ok": 1..kMaxMachines local counts, each 1..kMaxLocalProcesses, their sum in range; a valid
/// run id; arrival slots (elastic jobs) distinct, one per machine. "error": exit code 1..255
/// and a printable message.
std::variant<Layout, JoinProblem> decode_layout(std::string_view text, std::string_view key);

std::string encode(const FailureRecord& record);
/// Machine rank -1..kMaxMachines-1, worker rank >= -1, exit code 0..255, restartable 0 or 1,
/// host and cause printable.
FailureRecord decode_failure(std::string_view text, std::string_view key);

/// The round's verdict value: "ok", or the first failure's record.
std::string encode_verdict(const std::optional<FailureRecord>& failure);
/// nullopt for "ok"; else decode_failure.
std::optional<FailureRecord> decode_verdict(std::string_view verdict, std::string_view key);

/// A counter or round number read from `key`: a decimal integer in min..max.
std::int64_t decode_count(std::string_view text, std::int64_t min, std::int64_t max,
                          std::string_view key);
/// A host name or version: printable, at most kMaxNameBytes.
std::string decode_name(std::string_view text, std::string_view key);
/// A message another launcher left for this one (refused/<k>): printable, bounded.
std::string decode_message(std::string_view text, std::string_view key);

/// A fixed job's layout has exactly `num_machines` machines and no arrival slots.
void check_fixed_layout(const Layout& layout, int num_machines, std::string_view key);
/// An elastic round's layout has 1..max_machines machines, each with its arrival slot.
void check_elastic_layout(const Layout& layout, int max_machines, std::string_view key);

/// The hosts (by machine rank) of the records a fixed job formed from, checked against the
/// layout machine 0 published: every rank once, each with the local count the layout has.
/// `keys[i]` is where records[i] was read. Throws MalformedRecord naming the first that
/// does not fit.
std::vector<std::string> hosts_by_rank(const Layout& layout, const std::vector<JoinRecord>& records,
                                       const std::vector<std::string>& keys);

/// Why a round stops when a record it depends on is malformed: the same words on every
/// launcher that reads it, no worker to blame, exit code 1.
FailureRecord malformed_failure(const MalformedRecord& e, std::string_view run_id);
/// What a round's failure (or verdict) key says: its record, or malformed_failure.
FailureRecord failure_at(std::string_view text, std::string_view key, std::string_view run_id);

}  // namespace xlaunch::cluster
