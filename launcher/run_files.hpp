// The files of one run: with --log_dir, DIR/<run_id>/ holds the launcher's log
// (xlaunch.log), summary.json and attempt_<n>/rank_<r>/{stdout,stderr}.log + error.json; a
// run id used before gets DIR/<run_id>-2 (-3, ...) instead, so two runs never share a folder.
// Without it, a fresh temporary folder ($TMPDIR/xlaunch-<run_id>-XXXXXX) holds only the
// workers' error files, attempt_<n>.rank_<r>.error.json (no folders inside: each rmdir waits
// for a disk round trip where the file system discards, 0.3 ms here); when the job succeeds,
// exactly what this run made there is removed. A run whose output needs files without
// --log_dir (--redirects) gets the --log_dir layout in the temporary folder, kept like one.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xlaunch::launcher {

/// The files a run makes in its own folder (RunFiles::own_file takes no other name): removed
/// with a temporary folder after a success, and by the guardian from a killed launcher's.
inline constexpr const char* kRunOwnFiles[] = {"gpu.csv", "preload.log"};

class RunFiles {
 public:
  /// Without --log_dir: error files only, or every log (output kept off the console must
  /// land somewhere, as torchrun's does in a temporary folder).
  enum class Logs { none, in_temp };
  /// Creates the run folder (a new one, never an existing one). Prints a note on stderr and in
  /// xlaunch.log when DIR/<run_id> was taken. Throws LaunchError (exit 2) naming the folder
  /// when it cannot be created.
  RunFiles(const std::string& run_id, const std::optional<std::string>& log_dir,
           Logs without_log_dir = Logs::none);
  ~RunFiles();
  RunFiles(const RunFiles&) = delete;
  RunFiles& operator=(const RunFiles&) = delete;

  const std::string& run_dir() const { return run_dir_; }
  bool keeps_output() const { return keep_output_; }
  /// The logs are in a temporary folder nobody named: the run's end says where they are.
  bool logs_in_temp() const { return logs_in_temp_; }

  /// Where one rank of one attempt keeps its files.
  struct RankFiles {
    std::string error_file;  // its TORCHELASTIC_ERROR_FILE
    std::string log_dir;     // the folder of its logs; empty without --log_dir
    // Why its log folder could not be made ("cannot create DIR/attempt_1: No space left on
    // device"); log_dir is then where it would have been, and error_file is in the run folder.
    std::string log_error;
  };
  /// Says where the files of `rank` in `attempt` go, with --log_dir after creating its
  /// folder attempt_<n>/rank_<r>/. A folder that cannot be made is no error (log_error): the
  /// rank runs without log files rather than not at all.
  RankFiles prepare_rank(int attempt, int rank);
  /// Opens (creates, truncates) a log file in a rank's log folder; -1 without --log_dir.
  /// Throws std::system_error naming the file when it cannot be created.
  int open_stream_log(const std::string& log_dir, std::string_view name) const;

  /// Appends a timestamped line to xlaunch.log (no-op without --log_dir).
  void log(std::string_view line);
  /// Writes summary.json atomically (no-op without --log_dir).
  void write_summary(std::string_view json) const;
  /// The path of a file this run owns in its folder (one of kRunOwnFiles; another name is a
  /// logic error); removed with the temporary folder like the run's other files.
  std::string own_file(std::string_view name);
  /// Writes DIR/<name> atomically (no-op without --log_dir): activity.csv, report.html.
  void write_file(std::string_view name, std::string_view content) const;
  /// Marks the run as failed: the temporary folder is then kept for its error files, if any
  /// was written.
  void keep() { keep_temporary_ = true; }

 private:
  /// Removes what this run created in the temporary folder, with unlink and rmdir only: a
  /// folder that holds anything else (a worker's own file) stays.
  void remove_created() const;

  std::string run_dir_;
  std::vector<std::string> error_files_;  // handed out in the temporary folder
  std::vector<std::string> owned_files_;  // own_file()'s, in run_dir_
  bool keep_output_ = false;
  bool logs_in_temp_ = false;
  bool keep_temporary_ = false;
  int log_fd_ = -1;
};

/// Reads a whole file; nullopt when it does not exist or cannot be read.
std::optional<std::string> read_file(const std::string& path);

}  // namespace xlaunch::launcher
