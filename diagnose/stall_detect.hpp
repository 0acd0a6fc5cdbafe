// The stall signal (pure): a job is stalled when, for the whole --stall_timeout window, no
// worker wrote output, no worker sent the store a request, and no worker's process tree (nor
// the run's other processes) used CPU time to speak of (under kBusyFraction of one core
// between two samples) or moved data to speak of through read and write calls (under
// kIoBytesPerSecond). A worker that computes without printing keeps its CPU busy, one that
// downloads or writes a checkpoint moves data, so neither is a stall; a rank blocked in a
// collective or a store wait sleeps in the kernel and uses none.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace xlaunch::diagnose {

/// What the supervisor sees of one local rank at one moment.
struct RankActivity {
  int rank = 0;
  bool alive = false;
  double cpu_seconds = 0;            // cumulative, the whole process tree
  std::uint64_t output_lines = 0;    // pieces of output so far
  std::uint64_t store_requests = 0;  // requests its store connections made so far
  std::uint64_t io_bytes = 0;        // cumulative read and write bytes, the whole tree
};

/// The rank of the run's processes that left every rank's tree (RankActivity::rank).
inline constexpr int kOtherProcesses = -1;

class StallDetector {
 public:
  /// Below this share of one core between two samples, a rank's CPU use is idle noise
  /// (Python's and gloo's housekeeping threads wake now and then).
  static constexpr double kBusyFraction = 0.05;
  /// Below this rate a tree's reads and writes are housekeeping (a monitoring thread
  /// reading /proc, a heartbeat); a slow download is far above it.
  static constexpr double kIoBytesPerSecond = 16 * 1024;

  using TimePoint = std::chrono::steady_clock::time_point;

  explicit StallDetector(std::chrono::milliseconds timeout) : timeout_(timeout) {}

  /// Feeds one sample of every rank. Returns true exactly once per quiet spell: when the
  /// spell reaches the timeout. Any progress afterwards re-arms it.
  bool update(TimePoint now, const std::vector<RankActivity>& ranks);

  /// When the current quiet spell began.
  TimePoint quiet_since() const { return quiet_since_; }
  /// A rank's CPU seconds used since the spell began (0 when unknown).
  double cpu_in_window(int rank) const;

 private:
  std::chrono::milliseconds timeout_;
  bool started_ = false;
  bool reported_ = false;
  TimePoint last_{};
  TimePoint quiet_since_{};
  std::map<int, RankActivity> previous_;
  std::map<int, double> cpu_at_start_;  // per rank, when the spell began
  std::map<int, double> cpu_now_;
};

}  // namespace xlaunch::diagnose
