#include "job/python_ranks.hpp"

#include <catch2/catch.hpp>

using xlaunch::job::may_run_python;
using xlaunch::launcher::ProgramSpec;

namespace {

const std::string kElf(
    "\x7f"
    "ELF",
    4);

ProgramSpec as_is() {
  ProgramSpec spec;
  spec.no_python = true;
  return spec;
}

}  // namespace

TEST_CASE("a .py file or -m module runs Python whatever the interpreter is") {
  ProgramSpec spec;
  spec.program = "train.py";
  CHECK(may_run_python(spec, std::nullopt, "/usr/bin/python3", kElf));
  spec.module = true;
  CHECK(may_run_python(spec, std::nullopt, "/opt/bin/whatever", kElf));
}

TEST_CASE("a native program run as is does not, unless it is Python or runs another") {
  CHECK_FALSE(may_run_python(as_is(), std::nullopt, "/bin/true", kElf));
  CHECK_FALSE(may_run_python(as_is(), std::nullopt, "/srv/job/build/train_cpp", kElf));
  CHECK(may_run_python(as_is(), std::nullopt, "/usr/bin/python3.11", kElf));
  CHECK(may_run_python(as_is(), std::nullopt, "/opt/pypy/bin/pypy3", kElf));
  for (const char* runner : {"/bin/bash", "/bin/sh", "/usr/bin/env", "/usr/bin/numactl",
                             "/usr/bin/srun", "/home/u/.local/bin/uv"}) {
    CHECK(may_run_python(as_is(), std::nullopt, runner, kElf));
  }
}

TEST_CASE("a script of any interpreter, or a file that could not be read, may run Python") {
  CHECK(may_run_python(as_is(), std::nullopt, "/usr/local/bin/torchrun", "#!/u"));
  CHECK(may_run_python(as_is(), std::nullopt, "/srv/job/run.sh", "#!/b"));
  CHECK(may_run_python(as_is(), std::nullopt, "/srv/job/unreadable", ""));
  CHECK(may_run_python(as_is(), std::nullopt, "/srv/job/short", "\x7f"));
}

TEST_CASE("python_stacks set to true ships the machinery to any program") {
  CHECK(may_run_python(as_is(), true, "/bin/true", kElf));
  CHECK_FALSE(may_run_python(as_is(), false, "/bin/true", kElf));
}
