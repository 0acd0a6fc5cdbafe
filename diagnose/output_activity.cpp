#include "diagnose/output_activity.hpp"

#include <fmt/format.h>

namespace xlaunch::diagnose {

void OutputActivity::note(int attempt, int rank, std::chrono::system_clock::time_point when,
                          std::uint64_t lines) {
  const std::int64_t second =
      std::chrono::duration_cast<std::chrono::seconds>(when.time_since_epoch()).count();
  lines_[{attempt, rank, second}] += static_cast<std::uint32_t>(lines);
}

std::string OutputActivity::csv() const {
  std::string out = "attempt,rank,unix_second,lines\n";
  for (const auto& [key, count] : lines_) {
    const auto& [attempt, rank, second] = key;
    out += fmt::format("{},{},{},{}\n", attempt, rank, second, count);
  }
  return out;
}

}  // namespace xlaunch::diagnose
