// When each rank wrote output: lines per rank per second, kept for the run's picture
// (activity.csv: "attempt,rank,unix_second,lines"). Pure; fed by the supervisor's loop.
// Bounded: past kMaxActivityEntries counters, seconds are merged two by two (each row then
// counts the lines of 2, 4, 8... seconds from its unix_second), so a week-long run costs what
// a few hours do.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>

namespace xlaunch::diagnose {

inline constexpr std::size_t kMaxActivityEntries = 65536;

class OutputActivity {
 public:
  /// `lines` lines (or progress-bar redraws) of `rank` in `attempt` at `when`.
  void note(int attempt, int rank, std::chrono::system_clock::time_point when,
            std::uint64_t lines = 1);
  /// activity.csv's content, header included, ordered by attempt, rank, second.
  std::string csv() const;
  /// Seconds each row covers now: 1, or more once the counters were merged.
  std::int64_t seconds_per_row() const { return seconds_per_row_; }

 private:
  void merge_rows();

  // Per second, not per line: a chatty rank costs one counter per second it talks.
  std::map<std::tuple<int, int, std::int64_t>, std::uint64_t> lines_;
  std::int64_t seconds_per_row_ = 1;
};

}  // namespace xlaunch::diagnose
