// The report reads a run folder that anyone may have changed: a file is read only when it is
// a regular file (not a FIFO that never ends, not a link to /dev/zero) and not larger than a
// cap, so that `xlaunch report` and the report at the end of a run stay bounded
// (docs/diagnose.md, "The report's bounds").
#pragma once

#include <cstddef>
#include <string>

namespace xlaunch::report {

/// summary.json of a run is a few KB per worker; activity.csv and gpu.csv one line per
/// sample.
inline constexpr std::size_t kMaxSummaryBytes = 16u << 20;
inline constexpr std::size_t kMaxCsvBytes = 512u << 20;

struct RunFile {
  enum class Status { Ok, Missing, Problem } status = Status::Missing;
  std::string text;     // Ok: the content
  std::string problem;  // Problem: "Permission denied", "not a regular file (a FIFO)", ...
};

/// Reads `path` if it is a regular file of at most `max_bytes`.
RunFile read_run_file(const std::string& path, std::size_t max_bytes);

/// Whether both paths exist and name one file (device and inode), through links.
bool same_file(const std::string& a, const std::string& b);

}  // namespace xlaunch::report
