// What a run's picture shows, parsed from its run folder's files: summary.json (the
// workers of every attempt, the root cause, an optional `stall` field), activity.csv (lines
// per rank per second) and gpu.csv (NVML readings). Pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/gpu_summary.hpp"

namespace xlaunch::report {

/// A summary.json that cannot be read as one; what() says where and what.
struct PictureError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// One worker process of one attempt.
struct RankSpan {
  int rank = 0;
  int attempt = 0;
  long pid = 0;
  std::int64_t start_ms = 0;
  std::optional<std::int64_t> end_ms;  // absent: still running when the summary was written
  std::optional<int> exit_code;
  std::optional<std::string> signal_name;
  bool stopped_by_launcher = false;
  bool root_cause = false;
};

struct ActivityPoint {
  int attempt = 0;
  int rank = 0;
  std::int64_t unix_second = 0;
  unsigned lines = 0;
  std::int64_t seconds = 1;  // the span it covers: more than 1 once binned (picture_bounds)
};

/// A stretch of time the job made no progress (summary.json's `stall`, when present).
struct StallWindow {
  std::int64_t start_ms = 0;
  std::int64_t end_ms = 0;
  std::string note;
};

struct RunPicture {
  std::string run_id;
  std::string host;
  int world_size = 0;
  int exit_code = 0;
  std::optional<std::string> interrupted_by;
  std::optional<std::string> root_cause;  // "rank 1 exited with code 3 (attempt 0)"
  std::vector<RankSpan> spans;
  std::vector<ActivityPoint> activity;
  std::vector<gpu::GpuSample> gpu;
  std::vector<StallWindow> stalls;
};

/// "2026-11-21T23:05:01.123Z" as milliseconds since the epoch; nullopt when malformed.
std::optional<std::int64_t> parse_iso_ms(std::string_view text);

/// Builds the picture. `activity_csv` and `gpu_csv` may be empty (no output recorded, no
/// GPU). Throws PictureError naming what is wrong in summary.json; a `stall` field of an
/// unknown shape is ignored.
RunPicture parse_run_picture(std::string_view summary_json, std::string_view activity_csv,
                             std::string_view gpu_csv);

/// activity.csv's rows; malformed lines are skipped.
std::vector<ActivityPoint> parse_activity_csv(std::string_view text);

}  // namespace xlaunch::report
