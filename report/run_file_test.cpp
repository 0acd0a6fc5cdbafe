// The report reads only regular files under a size cap (issue 19, items 6 and 11).
#include "report/run_file.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

using namespace xlaunch::report;
namespace fs = std::filesystem;

TEST_CASE("a run file is read only when it is a regular file under the cap", "[report]") {
  const fs::path dir = fs::temp_directory_path() / ("run_file_test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "summary.json") << "{}";
  RunFile ok = read_run_file((dir / "summary.json").string(), 16);
  CHECK(ok.status == RunFile::Status::Ok);
  CHECK(ok.text == "{}");
  CHECK(read_run_file((dir / "missing").string(), 16).status == RunFile::Status::Missing);
  RunFile big = read_run_file((dir / "summary.json").string(), 1);
  CHECK(big.status == RunFile::Status::Problem);
  CHECK(big.problem == "2 bytes, more than the report reads (0 MiB)");
  // A FIFO would block the reader forever; /dev/zero would never end.
  REQUIRE(::mkfifo((dir / "activity.csv").c_str(), 0600) == 0);
  RunFile fifo = read_run_file((dir / "activity.csv").string(), 16);
  CHECK(fifo.status == RunFile::Status::Problem);
  CHECK(fifo.problem == "not a regular file (a FIFO)");
  fs::create_symlink("/dev/zero", dir / "gpu.csv");
  CHECK(read_run_file((dir / "gpu.csv").string(), 16).problem ==
        "not a regular file (a character device)");
  fs::remove_all(dir);
}
