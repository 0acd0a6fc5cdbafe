#include "diagnose/output_activity.hpp"

#include <fmt/format.h>

namespace xlaunch::diagnose {
namespace {

// The first second of the row of `width` seconds that holds `second` (floor, also below 0).
std::int64_t row_start(std::int64_t second, std::int64_t width) {
  const std::int64_t q = second / width;
  return (q - (second % width < 0 ? 1 : 0)) * width;
}

}  // namespace

void OutputActivity::note(int attempt, int rank, std::chrono::system_clock::time_point when,
                          std::uint64_t lines) {
  const std::int64_t second =
      std::chrono::duration_cast<std::chrono::seconds>(when.time_since_epoch()).count();
  lines_[{attempt, rank, row_start(second, seconds_per_row_)}] += lines;
  // Rows of 2^30 s are a run's whole life: past them only more ranks or attempts add rows.
  while (lines_.size() > kMaxActivityEntries && seconds_per_row_ < (std::int64_t{1} << 30)) {
    merge_rows();
  }
}

void OutputActivity::merge_rows() {
  seconds_per_row_ *= 2;
  std::map<std::tuple<int, int, std::int64_t>, std::uint64_t> merged;
  for (const auto& [key, count] : lines_) {
    const auto& [attempt, rank, second] = key;
    merged[{attempt, rank, row_start(second, seconds_per_row_)}] += count;
  }
  lines_ = std::move(merged);
}

std::string OutputActivity::csv() const {
  // Each row says the seconds it covers: 1, or 2, 4, 8... once merged.
  std::string out = "attempt,rank,unix_second,lines,seconds\n";
  for (const auto& [key, count] : lines_) {
    const auto& [attempt, rank, second] = key;
    out += fmt::format("{},{},{},{},{}\n", attempt, rank, second, count, seconds_per_row_);
  }
  return out;
}

}  // namespace xlaunch::diagnose
