#include "launcher/default_python.hpp"

#include <catch2/catch.hpp>
#include <set>
#include <string>

using xlaunch::launcher::invoked_folder;
using xlaunch::launcher::python_beside;

namespace {

struct FakeFiles {
  std::set<std::string> files, programs;
  auto exists() const {
    return [this](const std::string& p) { return files.contains(p) || programs.contains(p); };
  }
  auto is_program() const {
    return [this](const std::string& p) { return programs.contains(p); };
  }
};

}  // namespace

TEST_CASE("the python3 of the environment xlaunch was installed in") {
  FakeFiles fs;
  fs.programs = {"/home/u/venv/bin/python3", "/opt/conda/envs/t/bin/python3", "/usr/bin/python3"};
  fs.files = {"/home/u/venv/pyvenv.cfg", "/opt/conda/envs/t/conda-meta"};
  CHECK(python_beside("/home/u/venv/bin", fs.exists(), fs.is_program()) ==
        "/home/u/venv/bin/python3");
  CHECK(python_beside("/home/u/venv/bin/", fs.exists(), fs.is_program()) ==
        "/home/u/venv/bin/python3");
  CHECK(python_beside("/opt/conda/envs/t/bin", fs.exists(), fs.is_program()) ==
        "/opt/conda/envs/t/bin/python3");
  // A system folder is no environment: python3 on PATH (an activated venv's) decides.
  CHECK(python_beside("/usr/bin", fs.exists(), fs.is_program()) == "python3");
  CHECK(python_beside("", fs.exists(), fs.is_program()) == "python3");
  // An environment without a python3 program.
  fs.programs.erase("/home/u/venv/bin/python3");
  CHECK(python_beside("/home/u/venv/bin", fs.exists(), fs.is_program()) == "python3");
}

TEST_CASE("the folder xlaunch was found in, links not followed") {
  FakeFiles fs;
  fs.programs = {"/home/u/.local/bin/xlaunch", "/usr/bin/xlaunch", "/srv/job/xlaunch"};
  CHECK(invoked_folder("/home/u/venv/bin/xlaunch", "/usr/bin", "/w", fs.is_program()) ==
        "/home/u/venv/bin");
  CHECK(invoked_folder("bin/xlaunch", "/usr/bin", "/w", fs.is_program()) == "/w/bin");
  CHECK(invoked_folder("/xlaunch", "", "/w", fs.is_program()) == "/");
  CHECK(invoked_folder("xlaunch", "/nope:/home/u/.local/bin:/usr/bin", "/w", fs.is_program()) ==
        "/home/u/.local/bin");
  CHECK(invoked_folder("xlaunch", "/nope::/usr/bin", "/srv/job", fs.is_program()) == "/srv/job");
  CHECK(invoked_folder("xlaunch", "/nope", "/w", fs.is_program()).empty());
  CHECK(invoked_folder("", "/usr/bin", "/w", fs.is_program()).empty());
}
