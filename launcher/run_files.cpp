#include "launcher/run_files.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include "config/absolute_path.hpp"
#include "config/atomic_write.hpp"
#include "config/text.hpp"
#include "config/validate.hpp"
#include "launcher/console.hpp"
#include "launcher/exit_status.hpp"
#include "launcher/launch_error.hpp"
#include "launcher/process.hpp"
#include "launcher/report.hpp"

namespace fs = std::filesystem;

namespace xlaunch::launcher {
namespace {

// A run id reused this many times in one log folder is surely a script bug, not a plan.
constexpr int kMaxFolderSuffix = 1000;

LaunchError cannot_create(const std::string& dir, int error, std::string hint) {
  return LaunchError(fmt::format("cannot create the log folder {}: {}", dir, std::strerror(error)),
                     exit_status::kUsageError, std::move(hint));
}

/// mkdir(2) of one folder, which may exist already: empty, or why it cannot be made.
std::string make_dir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) == 0) return {};
  int error = errno;
  struct stat st {};
  if (error == EEXIST) {
    // A file in its place (a worker's) is named, rather than the folder below it.
    if (::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return {};
  }
  return fmt::format("cannot create {}: {}", dir, std::strerror(error));
}

// The run folder without --log_dir, in TMPDIR. A TMPDIR that is missing or not writable (a
// job script's, a cleaned-up node's) falls back to /tmp rather than failing the launch;
// `note` then says so.
std::string make_temp_run_dir(const std::string& run_id, std::optional<std::string>& note) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string name = "xlaunch-" + run_id + "-XXXXXX";
  // Absolute, as the workers get paths in it (TORCHELASTIC_ERROR_FILE).
  std::string pattern = (fs::path(config::temp_root()) / name).string();
  if (::mkdtemp(pattern.data()) != nullptr) return pattern;
  if (!tmp || !*tmp) throw cannot_create(pattern, errno, "set TMPDIR to a writable folder");
  const int error = errno;
  std::string fallback = (fs::path("/tmp") / name).string();
  if (::mkdtemp(fallback.data()) == nullptr) {
    throw cannot_create(pattern, error, "set TMPDIR to a writable folder");
  }
  note = fmt::format("TMPDIR={}: cannot create a folder there ({}); this run's logs go to {}",
                     config::printable(tmp), std::strerror(error), fallback);
  return fallback;
}

// Why another user could swap this run's folder in `dir` for a link to files of yours (the
// logs would then be written there), or nothing. The sticky bit, as on /tmp, keeps others
// from renaming what you made.
std::optional<std::string> shared_folder_risk(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return std::nullopt;
  if (st.st_uid != ::geteuid() && st.st_uid != 0) {
    return fmt::format("it belongs to uid {}, who could swap this run's folder for a link",
                       st.st_uid);
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0) {
    return fmt::format(
        "it has mode {:04o} without the sticky bit: other users could swap "
        "this run's folder for a link",
        st.st_mode & 07777);
  }
  return std::nullopt;
}

}  // namespace

RunFiles::RunFiles(const std::string& run_id, const std::optional<std::string>& log_dir,
                   Logs without_log_dir) {
  std::optional<std::string> taken;
  std::optional<std::string> temp_note;
  if (log_dir) {
    keep_output_ = true;
    std::error_code ec;
    fs::create_directories(*log_dir, ec);  // the user's folder; it may well exist
    if (ec) throw cannot_create(*log_dir, ec.value(), "choose a writable --log_dir");
    if (const auto risk = shared_folder_risk(*log_dir)) {
      say("xlaunch: warning: --log_dir {}: {}; choose a folder of your own\n",
          config::printable(*log_dir), *risk);
    }
    // mkdir fails on an existing folder, so this run's folder is new even when another
    // xlaunch with the same run id starts at the same moment.
    for (int n = 1;; ++n) {
      const std::string name = n == 1 ? run_id : fmt::format("{}-{}", run_id, n);
      run_dir_ = (fs::path(config::absolute_path(*log_dir)) / name).string();
      if (::mkdir(run_dir_.c_str(), 0755) == 0) break;
      if (errno != EEXIST) throw cannot_create(run_dir_, errno, "choose a writable --log_dir");
      if (n == 1) taken = run_dir_;
      if (n == kMaxFolderSuffix) {
        throw LaunchError(
            fmt::format("cannot create a log folder for run {}: {} and {} more like it exist",
                        run_id, *taken, kMaxFolderSuffix - 1),
            exit_status::kUsageError, "give each run its own --rdzv_id, or another --log_dir");
      }
    }
  } else {
    run_dir_ = make_temp_run_dir(run_id, temp_note);
    // Never removed: it holds output the console did not get.
    keep_output_ = logs_in_temp_ = without_log_dir == Logs::in_temp;
  }
  if (keep_output_) {
    std::string path = run_dir_ + "/xlaunch.log";
    log_fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  }
  if (temp_note) {
    say("xlaunch: note: {}\n", *temp_note);
    log(*temp_note);
  }
  if (taken) {
    const std::string note =
        fmt::format("{} already exists (a run with the same run id); this run's logs go to {}",
                    *taken, run_dir_);
    say("xlaunch: note: {}\n", note);
    log(note);
  }
}

RunFiles::~RunFiles() {
  close_fd(log_fd_);
  if (keep_output_) return;
  if (!keep_temporary_) {
    remove_created();
  } else {
    // A failed run keeps what its ranks wrote (their error files); an empty folder, the
    // usual case (most ranks never write one), tells nobody anything.
    ::rmdir(run_dir_.c_str());
  }
}

void RunFiles::remove_created() const {
  for (const std::string& file : error_files_) ::unlink(file.c_str());  // most never written
  for (const std::string& file : owned_files_) ::unlink(file.c_str());
  ::rmdir(run_dir_.c_str());  // fails, harmlessly, when a worker left something else
}

RunFiles::RankFiles RunFiles::prepare_rank(int attempt, int rank) {
  if (!keep_output_) {
    error_files_.push_back(
        fmt::format("{}/attempt_{}.rank_{}.error.json", run_dir_, attempt, rank));
    return {error_files_.back(), "", ""};
  }
  const std::string attempt_dir = fmt::format("{}/attempt_{}", run_dir_, attempt);
  std::string dir = fmt::format("{}/rank_{}", attempt_dir, rank);
  std::string error = make_dir(attempt_dir);
  if (error.empty()) error = make_dir(dir);
  if (!error.empty()) {
    // Beside the folder that is not there (the temporary layout's name): a run folder that
    // still has room keeps the rank's error file for the report.
    return {fmt::format("{}/attempt_{}.rank_{}.error.json", run_dir_, attempt, rank), dir,
            std::move(error)};
  }
  return {dir + "/error.json", dir, ""};
}

int RunFiles::open_stream_log(const std::string& log_dir, std::string_view name) const {
  if (!keep_output_) return -1;
  std::string path = fmt::format("{}/{}", log_dir, name);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "cannot create " + path);
  return fd;
}

void RunFiles::log(std::string_view line) {
  if (log_fd_ < 0) return;
  write_all(log_fd_, fmt::format("{} {}\n", config::iso_time(Clock::now()), line));
}

void RunFiles::write_summary(std::string_view json) const {
  if (!keep_output_) return;
  config::atomic_write(run_dir_ + "/summary.json", json);
}

std::string RunFiles::own_file(std::string_view name) {
  if (std::find(std::begin(kRunOwnFiles), std::end(kRunOwnFiles), name) == std::end(kRunOwnFiles)) {
    // The guardian would leave it in a killed launcher's temporary folder.
    throw std::logic_error(fmt::format("{} is not one of kRunOwnFiles", name));
  }
  owned_files_.push_back(fmt::format("{}/{}", run_dir_, name));
  return owned_files_.back();
}

void RunFiles::write_file(std::string_view name, std::string_view content) const {
  if (!keep_output_) return;
  config::atomic_write(fmt::format("{}/{}", run_dir_, name), content);
}

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

}  // namespace xlaunch::launcher
