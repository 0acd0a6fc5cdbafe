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
// Machine 0 decides the layout and the verdicts; the others only follow, so every launcher
// prints the same text. Pure functions first (unit-tested), then the Agent that talks.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
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

std::string encode(const JoinRecord& record);
/// Throws std::invalid_argument for a malformed record.
JoinRecord decode_join(std::string_view text);

/// The job's shape once every machine joined.
struct Layout {
  std::vector<int> local_processes;  // per machine rank
  /// Machine 0's run id, the job's on every machine (TORCHELASTIC_RUN_ID, log folders).
  std::string run_id;
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

/// The message for machines that did not arrive before --rdzv_timeout. Pure.
JoinProblem missing_machines(const std::vector<JoinRecord>& arrived, int num_machines,
                             std::chrono::milliseconds timeout);

/// The encoded "layout" value and its parse (either a Layout or a JoinProblem).
std::string encode_layout(const std::variant<Layout, JoinProblem>& decision);
std::variant<Layout, JoinProblem> decode_layout(std::string_view text);

std::string encode(const FailureRecord& record);
FailureRecord decode_failure(std::string_view text);

/// Settings every machine must agree on, as sorted "key=value" lines.
std::string agreed_settings(const std::vector<std::pair<std::string, std::string>>& values);

/// Thrown by Agent operations that end the launch; exit_code per docs/multi-machine.md.
class AgentError : public std::runtime_error {
 public:
  AgentError(const std::string& what, int exit_code)
      : std::runtime_error(what), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

struct AgentOptions {
  std::string run_id;      // names the keys: --rdzv_id, or "default"
  std::string job_run_id;  // this launcher's run id; machine 0's becomes the job's
  int num_machines = 1;
  int machine_rank = 0;
  std::string store_host = "127.0.0.1";  // machine 0's store
  std::uint16_t store_port = 0;
  std::string host;  // this machine's name, for messages
  long pid = 0;
  int local_processes = 1;
  std::string version;
  std::string settings;                // agreed_settings(...)
  std::optional<int> total_processes;  // --num_processes, when given without --nproc_per_node
  std::chrono::milliseconds rdzv_timeout{std::chrono::seconds(900)};
  std::chrono::milliseconds heartbeat_timeout{std::chrono::seconds(30)};
};

/// One launcher's side of the protocol. Blocking calls are made from the main thread; a
/// monitor thread (its own store connection) beats and watches for failures and lost
/// machines and reports them through the callback given to start_monitor.
class Agent {
 public:
  /// Called on the monitor thread with the round's failure, once per round.
  using OnFailure = std::function<void(int round, const FailureRecord&)>;

  explicit Agent(AgentOptions options);
  ~Agent();  // stops the monitor thread

  /// Connects (retrying until rdzv_timeout), registers and waits for every machine.
  /// Machine 0 decides and publishes the layout. Throws AgentError (the same message on
  /// every launcher) when machines disagree or do not all arrive in time.
  Layout join();

  /// Starts heartbeats and failure watching (after join).
  void start_monitor(OnFailure on_failure);
  /// Before round r's workers start (r >= 1): machine 0 runs `clear_store` (which empties
  /// the store) and announces the round; the others wait for that. Throws AgentError.
  void begin_round(int round, const std::function<void()>& clear_store);
  /// Publishes this machine's failure of `round` unless another came first; returns the
  /// winning record. Never throws (a lost store is reported by the monitor).
  FailureRecord report_failure(int round, const FailureRecord& record);
  /// After this machine's workers of `round` ended: waits until the job's verdict is known
  /// (machine 0: every machine done or lost). Returns the round's failure, or nullopt when
  /// every machine succeeded.
  std::optional<FailureRecord> finish_round(int round, std::optional<FailureRecord> local);
  /// Stops the monitor thread; idempotent.
  void stop_monitor();

  /// Key of this run: "xlaunch/<run_id>/<suffix>".
  std::string key(std::string_view suffix) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xlaunch::cluster
