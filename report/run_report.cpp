#include "report/run_report.hpp"

#include <fmt/format.h>

#include <system_error>

#include "config/atomic_write.hpp"
#include "config/usage_error.hpp"
#include "report/report_html.hpp"
#include "report/run_file.hpp"
#include "report/run_picture.hpp"

namespace xlaunch::report {

namespace {

// One of the run folder's files, or a UsageError that says why it cannot be read.
std::string read_or_explain(const std::string& path, std::size_t max_bytes, bool required) {
  RunFile file = read_run_file(path, max_bytes);
  if (file.status == RunFile::Status::Ok) return std::move(file.text);
  if (file.status == RunFile::Status::Problem) {
    throw UsageError(fmt::format("cannot read {}: {}", path, file.problem),
                     "check the run folder's permissions and files; xlaunch launch writes "
                     "them as regular files");
  }
  if (required) {
    throw UsageError(
        fmt::format("cannot read {}: not a run folder, or the run has not ended", path),
        "give the folder of one run, LOG_DIR/RUN_ID, from a launch with --log_dir");
  }
  return {};
}

}  // namespace

std::string write_run_report(const std::string& run_dir, const std::string& output) {
  if (run_dir.empty()) {
    throw UsageError("the run folder is empty",
                     "give the folder of one run, LOG_DIR/RUN_ID, from a launch with --log_dir");
  }
  const std::string summary_path = run_dir + "/summary.json";
  const std::string summary = read_or_explain(summary_path, kMaxSummaryBytes, true);
  RunPicture picture;
  try {
    picture =
        parse_run_picture(summary, read_or_explain(run_dir + "/activity.csv", kMaxCsvBytes, false),
                          read_or_explain(run_dir + "/gpu.csv", kMaxCsvBytes, false));
  } catch (const PictureError& e) {
    throw UsageError(fmt::format("{}: {}", summary_path, e.what()),
                     "the file was changed or cut off; it is written by xlaunch launch");
  }
  const std::string path = output.empty() ? run_dir + "/report.html" : output;
  // The page replaces what is there: never one of the files it is drawn from.
  for (const char* input : {"summary.json", "activity.csv", "gpu.csv", "xlaunch.log"}) {
    if (same_file(path, run_dir + "/" + input)) {
      throw UsageError(fmt::format("-o {} is the run's own {}: writing the page there would "
                                   "replace it",
                                   path, input),
                       "write the page elsewhere, e.g. -o report.html");
    }
  }
  try {
    config::atomic_write(path, render_report_html(picture));
  } catch (const std::system_error& e) {
    throw UsageError(e.what(), output.empty() ? "the run folder is not writable here: write "
                                                "the page elsewhere with -o FILE"
                                              : "give -o a file in a folder you can write");
  }
  return path;
}

}  // namespace xlaunch::report
