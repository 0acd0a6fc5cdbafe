#include "report/run_report.hpp"

#include <fmt/format.h>

#include "config/atomic_write.hpp"
#include "config/usage_error.hpp"
#include "launcher/run_files.hpp"
#include "report/report_html.hpp"
#include "report/run_picture.hpp"

namespace xlaunch::report {

std::string write_run_report(const std::string& run_dir, const std::string& output) {
  const std::string summary_path = run_dir + "/summary.json";
  const auto summary = launcher::read_file(summary_path);
  if (!summary) {
    throw UsageError(
        fmt::format("cannot read {}: not a run folder, or the run has not ended", summary_path),
        "give the folder of one run, LOG_DIR/RUN_ID, from a launch with --log_dir");
  }
  RunPicture picture;
  try {
    picture =
        parse_run_picture(*summary, launcher::read_file(run_dir + "/activity.csv").value_or(""),
                          launcher::read_file(run_dir + "/gpu.csv").value_or(""));
  } catch (const PictureError& e) {
    throw UsageError(fmt::format("{}: {}", summary_path, e.what()),
                     "the file was changed or cut off; it is written by xlaunch launch");
  }
  const std::string path = output.empty() ? run_dir + "/report.html" : output;
  config::atomic_write(path, render_report_html(picture));
  return path;
}

}  // namespace xlaunch::report
