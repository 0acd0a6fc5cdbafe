// Writes a run folder's picture (report.html) from its files. The only file I/O of the
// report module.
#pragma once

#include <string>

namespace xlaunch::report {

/// Reads RUN_DIR/summary.json (required), activity.csv and gpu.csv (optional), writes
/// `output` (default RUN_DIR/report.html) atomically and returns its path. Throws
/// UsageError naming the file when summary.json is missing or unreadable.
std::string write_run_report(const std::string& run_dir, const std::string& output = "");

}  // namespace xlaunch::report
