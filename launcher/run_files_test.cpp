#include "launcher/run_files.hpp"

#include <stdlib.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <system_error>

namespace fs = std::filesystem;
using namespace xlaunch::launcher;

namespace {

/// A fresh folder, also set as TMPDIR while the test runs.
struct TempDir {
  fs::path path;
  std::string old_tmpdir;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "xlaunch-runfiles-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path = pattern;
    if (const char* t = std::getenv("TMPDIR")) old_tmpdir = t;
    ::setenv("TMPDIR", path.c_str(), 1);
  }
  ~TempDir() {
    if (old_tmpdir.empty()) {
      ::unsetenv("TMPDIR");
    } else {
      ::setenv("TMPDIR", old_tmpdir.c_str(), 1);
    }
    fs::remove_all(path);
  }
};

std::size_t entries(const fs::path& dir) {
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), {}));
}

}  // namespace

TEST_CASE("a reused run id gets a new log folder, never the old one", "[run_files]") {
  TempDir tmp;
  const std::string logs = (tmp.path / "logs").string();
  RunFiles first("exp", logs);
  RunFiles second("exp", logs);
  RunFiles third("exp", logs);
  CHECK(first.run_dir() == logs + "/exp");
  CHECK(second.run_dir() == logs + "/exp-2");
  CHECK(third.run_dir() == logs + "/exp-3");
}

TEST_CASE("the temporary folder is new, and success removes only what the run made",
          "[run_files]") {
  TempDir tmp;
  fs::create_directory(tmp.path / "xlaunch-job");  // the name the folder had before: not ours
  std::ofstream(tmp.path / "xlaunch-job" / "theirs.txt") << "x";
  std::string dir;
  {
    RunFiles files("job", std::nullopt);
    dir = files.run_dir();
    CHECK(dir.starts_with((tmp.path / "xlaunch-job-").string()));
    const RunFiles::RankFiles rank = files.prepare_rank(0, 3);
    CHECK(rank.error_file == dir + "/attempt_0.rank_3.error.json");
    CHECK(rank.log_dir.empty());  // no folders inside: nothing to log there
    std::ofstream(rank.error_file) << "{}";
    files.prepare_rank(0, 4);  // handed out, never written
    std::ofstream(files.prepare_rank(1, 3).error_file) << "{}";
    CHECK(entries(dir) == 2);
  }
  CHECK_FALSE(fs::exists(dir));
  CHECK(fs::exists(tmp.path / "xlaunch-job" / "theirs.txt"));
  CHECK(entries(tmp.path) == 1);
}

TEST_CASE("the run's own files are the ones the guardian knows, and only those", "[run_files]") {
  TempDir tmp;
  RunFiles files("job", std::nullopt);
  for (const char* name : kRunOwnFiles) {
    std::ofstream(files.own_file(name)) << "x";
  }
  CHECK_THROWS_AS(files.own_file("notes.txt"), std::logic_error);
}

TEST_CASE("a file a worker left keeps its folder; a failed run keeps what was written",
          "[run_files]") {
  TempDir tmp;
  std::string left, kept;
  {
    RunFiles files("job", std::nullopt);
    left = files.run_dir();
    std::ofstream(files.prepare_rank(0, 0).error_file) << "{}";
    std::ofstream(left + "/core.txt") << "x";
  }
  CHECK(fs::exists(left + "/core.txt"));
  CHECK_FALSE(fs::exists(left + "/attempt_0.rank_0.error.json"));
  {
    RunFiles files("job", std::nullopt);
    kept = files.run_dir();
    std::ofstream(files.prepare_rank(0, 0).error_file) << "{}";
    files.keep();
  }
  CHECK(fs::exists(kept + "/attempt_0.rank_0.error.json"));
  {
    RunFiles files("job", std::nullopt);  // failed, and no rank wrote its error file
    kept = files.run_dir();
    files.prepare_rank(0, 0);
    files.keep();
  }
  CHECK_FALSE(fs::exists(kept));
}

TEST_CASE("with --log_dir each rank has a folder for its logs and error file", "[run_files]") {
  TempDir tmp;
  const std::string logs = (tmp.path / "logs").string();
  RunFiles files("exp", logs);
  const RunFiles::RankFiles rank = files.prepare_rank(1, 2);
  CHECK(rank.log_dir == logs + "/exp/attempt_1/rank_2");
  CHECK(rank.error_file == logs + "/exp/attempt_1/rank_2/error.json");
  CHECK(fs::is_directory(rank.log_dir));
  const int fd = files.open_stream_log(rank.log_dir, "stdout.log");
  CHECK(fd >= 0);
  ::close(fd);
  CHECK(fs::exists(rank.log_dir + "/stdout.log"));
}

TEST_CASE("a rank log folder that cannot be made is said, not thrown", "[run_files]") {
  TempDir tmp;
  const std::string logs = (tmp.path / "logs").string();
  RunFiles files("exp", logs);
  std::ofstream(logs + "/exp/attempt_1") << "a worker's file";  // where the folder goes
  RunFiles::RankFiles rank;
  REQUIRE_NOTHROW(rank = files.prepare_rank(1, 0));
  CHECK(rank.log_error == "cannot create " + logs + "/exp/attempt_1: File exists");
  CHECK(rank.log_dir == logs + "/exp/attempt_1/rank_0");  // where its logs would have gone
  // The run folder still has room for its error file.
  CHECK(rank.error_file == logs + "/exp/attempt_1.rank_0.error.json");
  CHECK(files.prepare_rank(0, 0).log_error.empty());
  try {
    files.open_stream_log(rank.log_dir, "stdout.log");
    FAIL("a log in a missing folder was opened");
  } catch (const std::system_error& e) {
    CHECK(std::string(e.what()) ==
          "cannot create " + logs + "/exp/attempt_1/rank_0/stdout.log: Not a directory");
  }
}

TEST_CASE("logs in the temporary folder: the --log_dir layout, kept after success", "[run_files]") {
  TempDir tmp;
  std::string dir;
  {
    RunFiles files("job", std::nullopt, RunFiles::Logs::in_temp);
    dir = files.run_dir();
    CHECK(dir.starts_with((tmp.path / "xlaunch-job-").string()));
    CHECK(files.keeps_output());
    CHECK(files.logs_in_temp());
    const RunFiles::RankFiles rank = files.prepare_rank(0, 1);
    CHECK(rank.log_dir == dir + "/attempt_0/rank_1");
    const int fd = files.open_stream_log(rank.log_dir, "stdout.log");
    CHECK(fd >= 0);
    ::close(fd);
  }
  CHECK(fs::exists(dir + "/attempt_0/rank_1/stdout.log"));  // the output nobody saw
  CHECK(fs::exists(dir + "/xlaunch.log"));
  CHECK_FALSE(RunFiles("job", std::nullopt).logs_in_temp());
}
