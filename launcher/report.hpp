// What the launcher tells the user when a job ends: the root cause of a failure, the exit
// code, and summary.json. Pure functions over what the supervisor recorded.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace xlaunch::launcher {

using Clock = std::chrono::system_clock;

/// One worker process of one attempt.
struct WorkerOutcome {
  int rank = 0;
  int local_rank = 0;
  int attempt = 0;
  long pid = 0;
  std::optional<int> exit_code;      // set when it exited
  std::optional<int> signal;         // set when a signal ended it
  bool stopped_by_launcher = false;  // ended by the launcher's teardown, not on its own
  // Why it got no process (pid 0): "could not set up this rank: Too many open files".
  std::optional<std::string> start_error;
  Clock::time_point start;
  std::optional<Clock::time_point> end;
};

/// A worker that failed first, with what it left behind.
struct RootCause {
  WorkerOutcome worker;
  std::string host;
  std::vector<std::string> stderr_tail;        // its last stderr lines
  std::string error_file;                      // TORCHELASTIC_ERROR_FILE path
  std::optional<std::string> error_file_text;  // its content, if the worker wrote it
};

/// A rank's log file that stops short: a write failed (a full disk), and the rest of the
/// rank's output reached the console only.
struct LogCut {
  int rank = 0;
  int attempt = 0;
  std::string path;
  std::uint64_t bytes = 0;  // what the file holds: where it stops
  std::string error;        // "No space left on device"
};
/// "rank 3's log /logs/r/attempt_0/rank_3/stdout.log stops at byte 65536: No space left on
/// device; the rest of its output reached the console only"
std::string describe_log_cut(const LogCut& cut);

struct RunSummary {
  std::string run_id;
  std::string host;
  int world_size = 0;
  int exit_code = 0;
  std::optional<int> interrupted_by;   // signal that stopped the launcher
  std::vector<WorkerOutcome> workers;  // every attempt's
  // Workers a stop kept from starting (a failure or a signal while workers started).
  std::vector<WorkerOutcome> not_started;
  std::optional<RootCause> root_cause;
  std::optional<std::string> stall_json;  // the last stall report, as a JSON object
  std::vector<LogCut> log_cuts;           // rank logs cut short, in the order noticed
};

/// 0 for success, the exit code, or 128 + signal.
int exit_code_of(const WorkerOutcome& worker);
/// True when the worker neither exited 0 nor is still running.
bool failed(const WorkerOutcome& worker);
/// "SIGSEGV" for 11; "signal 99" when unknown.
std::string signal_name(int signal);
/// "exited with code 3" / "was killed by SIGSEGV (signal 11)" / "could not be started: why".
std::string describe_end(const WorkerOutcome& worker);

/// The multi-line root-cause report printed to stderr, every line prefixed "xlaunch: ".
std::string format_root_cause(const RootCause& cause, int world_size);

/// summary.json's content.
std::string summary_json(const RunSummary& summary);

}  // namespace xlaunch::launcher
