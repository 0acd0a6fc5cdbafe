// What a stop signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT) asks of the supervisor, by what the
// attempt was doing when the signal was read. Pure: the supervisor acts on the answer.
#pragma once

#include <chrono>

namespace xlaunch::launcher {

/// A second stop signal this soon after the first is the same request arriving twice; a
/// person's second Ctrl-C comes later.
inline constexpr auto kSameStopRequest = std::chrono::milliseconds(500);

enum class StopResponse {
  /// Every worker had ended before the signal was read (their exits and it arrived in one
  /// batch): nothing to stop and the exit code is decided, but no restart may follow.
  after_the_end,
  /// The first request: stop every worker, then the job ends with 128+signal.
  stop,
  /// The same Ctrl-C delivered twice (the terminal's and a wrapper's, such as timeout(1)).
  same_request,
  /// A second request: kill every worker now.
  kill_now,
  /// The job is already failing: kill now; the failure stays the root cause.
  hurry_teardown,
};

struct StopState {
  bool attempt_done = false;         // every worker ended and was reaped
  bool interrupted = false;          // a stop signal was acted on before
  bool within_same_request = false;  // ... and less than 0.5 s ago
  bool failing = false;              // a worker failed (the teardown runs)
};

StopResponse respond_to_stop(const StopState& state);

}  // namespace xlaunch::launcher
