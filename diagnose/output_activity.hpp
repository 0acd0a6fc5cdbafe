// When each rank wrote output: lines per rank per second, kept for the run's picture
// (activity.csv: "attempt,rank,unix_second,lines"). Pure; fed by the supervisor's loop.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>

namespace xlaunch::diagnose {

class OutputActivity {
 public:
  /// `lines` lines (or progress-bar redraws) of `rank` in `attempt` at `when`.
  void note(int attempt, int rank, std::chrono::system_clock::time_point when,
            std::uint64_t lines = 1);
  /// activity.csv's content, header included, ordered by attempt, rank, second.
  std::string csv() const;

 private:
  // Per second, not per line: a chatty rank costs one counter per second it talks.
  std::map<std::tuple<int, int, std::int64_t>, std::uint32_t> lines_;
};

}  // namespace xlaunch::diagnose
