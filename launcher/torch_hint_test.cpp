// The "No module named 'torch'" hint: when it applies, which interpreters it asks, what it
// says, and (with scripted stand-ins for interpreters) which one it names.
#include "launcher/torch_hint.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

using namespace xlaunch::launcher;

namespace {

RootCause died_after(std::chrono::seconds lived, std::string last_line) {
  RootCause c;
  c.worker.exit_code = 1;
  c.worker.start = Clock::now();
  c.worker.end = c.worker.start + lived;
  c.stderr_tail = {"Traceback (most recent call last):", "  File \"train.py\", line 1",
                   std::move(last_line)};
  return c;
}

void script(const std::filesystem::path& path, int exit_code) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << "#!/bin/sh\nexit " << exit_code << "\n";
  ::chmod(path.c_str(), 0755);
}

}  // namespace

TEST_CASE("torch hint: only a quick death of a missing torch import", "[torch_hint]") {
  using std::chrono::seconds;
  CHECK(failed_importing_torch(
      died_after(seconds(1), "ModuleNotFoundError: No module named 'torch'")));
  CHECK_FALSE(failed_importing_torch(
      died_after(seconds(120), "ModuleNotFoundError: No module named 'torch'")));
  CHECK_FALSE(failed_importing_torch(
      died_after(seconds(1), "ModuleNotFoundError: No module named 'torchvision'")));
  CHECK_FALSE(failed_importing_torch(died_after(seconds(1), "ValueError: bad batch")));
  RootCause fine = died_after(seconds(1), "ModuleNotFoundError: No module named 'torch'");
  fine.worker.exit_code = 0;
  CHECK_FALSE(failed_importing_torch(fine));
}

TEST_CASE("torch hint: the active venv and conda prefix first, then PATH", "[torch_hint]") {
  const auto list =
      python_candidates({{"VIRTUAL_ENV", "/v"}, {"CONDA_PREFIX", "/c"}, {"PATH", "/a::/b"}});
  REQUIRE(list.size() >= 8);
  CHECK(list[0] == "/v/bin/python3");
  CHECK(list[1] == "/v/bin/python");
  CHECK(list[2] == "/c/bin/python3");
  CHECK(list[4] == "/a/python3");
  CHECK(list[5] == "/a/python");
  CHECK(std::find(list.begin(), list.end(), "/a/python3.11") != list.end());
  CHECK(std::find(list.begin(), list.end(), "/b/python3") != list.end());
  CHECK(std::find(list.begin(), list.end(), "/python3") == list.end());  // PATH's "" is "."
}

TEST_CASE("torch hint: names the interpreter that ran and how to choose another", "[torch_hint]") {
  const std::string found = torch_missing_hint("/opt/py/bin/python3", "/usr/bin/python3");
  CHECK(found.find("the workers ran /opt/py/bin/python3, which cannot import torch") !=
        std::string::npos);
  CHECK(found.find("/usr/bin/python3 has torch: run with --python /usr/bin/python3") !=
        std::string::npos);
  CHECK(found.find("XLAUNCH_PYTHON=/usr/bin/python3") != std::string::npos);
  CHECK(found.find("'python: /usr/bin/python3' in the config file") != std::string::npos);
  const std::string none = torch_missing_hint("/opt/py/bin/python3", std::nullopt);
  CHECK(none.find("no other Python on PATH") != std::string::npos);
  CHECK(none.find("/opt/py/bin/python3 -m pip install torch") != std::string::npos);
}

TEST_CASE("torch hint: asks the other interpreters, skipping the one that ran", "[torch_hint]") {
  const auto dir =
      std::filesystem::temp_directory_path() / ("xlaunch-torch-hint-" + std::to_string(::getpid()));
  script(dir / "a" / "python3", 3);  // the one that ran (asked, it would say "no torch")
  script(dir / "b" / "python3", 3);  // no torch
  script(dir / "c" / "python", 0);   // torch
  const std::string path =
      (dir / "a").string() + ":" + (dir / "b").string() + ":" + (dir / "c").string();
  CHECK(find_python_with_torch({{"PATH", path}}, (dir / "a" / "python3").string()) ==
        (dir / "c" / "python").string());
  CHECK(find_python_with_torch({{"PATH", (dir / "b").string()}},
                               (dir / "a" / "python3").string()) == std::nullopt);
  // A venv's interpreter (pyvenv.cfg beside its bin/) is another Python than its base.
  script(dir / "venv" / "bin" / "python3", 0);
  std::ofstream(dir / "venv" / "pyvenv.cfg") << "home = /usr/bin\n";
  CHECK(find_python_with_torch({{"VIRTUAL_ENV", (dir / "venv").string()}, {"PATH", path}},
                               (dir / "a" / "python3").string()) ==
        (dir / "venv" / "bin" / "python3").string());
  std::filesystem::remove_all(dir);
}
