#include "launcher/program.hpp"

#include <catch2/catch.hpp>
#include <set>

#include "launcher/exit_status.hpp"
#include "launcher/launch_error.hpp"

using namespace xlaunch::launcher;
using Strings = std::vector<std::string>;

namespace {

ProgramSpec spec_of(std::string program, std::vector<std::string> args = {}, bool module = false,
                    bool no_python = false) {
  ProgramSpec spec;
  spec.program = std::move(program);
  spec.args = std::move(args);
  spec.module = module;
  spec.no_python = no_python;
  return spec;
}

// A fake filesystem: executables found on PATH, readable files.
ExecProbe fake_probe(std::set<std::string> executables, std::set<std::string> files) {
  return ExecProbe{
      [executables](const std::string& name, const std::string&) -> std::optional<std::string> {
        std::string full = name.find('/') == std::string::npos ? "/usr/bin/" + name : name;
        if (executables.contains(full)) return full;
        return std::nullopt;
      },
      [files](const std::string& path) { return files.contains(path); },
      [executables, files](const std::string& path) {
        return files.contains(path) || executables.contains(path);
      }};
}

int exit_code_of_error(const ProgramSpec& spec, const ExecProbe& probe) {
  try {
    resolve_worker_argv(spec, "/usr/bin", probe);
  } catch (const LaunchError& e) {
    return e.exit_code();
  }
  return -1;
}

}  // namespace

TEST_CASE("a .py program runs under the chosen Python, unbuffered", "[program]") {
  auto probe = fake_probe({"/usr/bin/python3", "/opt/py/bin/python"}, {"train.py"});
  ProgramSpec spec = spec_of("train.py", {"--lr", "0.1"});
  CHECK(resolve_worker_argv(spec, "/usr/bin", probe) ==
        Strings{"/usr/bin/python3", "-u", "train.py", "--lr", "0.1"});
  spec.python = "/opt/py/bin/python";
  CHECK(resolve_worker_argv(spec, "/usr/bin", probe).front() == "/opt/py/bin/python");
}

TEST_CASE("module mode runs python -m, no_python runs the program as is", "[program]") {
  auto probe = fake_probe({"/usr/bin/python3", "/usr/bin/train", "./tool.py"}, {"./tool.py"});
  ProgramSpec module = spec_of("pkg.train", {"x"}, true);
  CHECK(resolve_worker_argv(module, "/usr/bin", probe) ==
        Strings{"/usr/bin/python3", "-u", "-m", "pkg.train", "x"});
  ProgramSpec binary = spec_of("train", {"a"});
  CHECK(resolve_worker_argv(binary, "/usr/bin", probe) == Strings{"/usr/bin/train", "a"});
  ProgramSpec script = spec_of("./tool.py", {}, false, true);
  CHECK(resolve_worker_argv(script, "/usr/bin", probe) == Strings{"./tool.py"});
}

TEST_CASE("a program that cannot run is reported with its name and a hint", "[program]") {
  auto probe = fake_probe({"/usr/bin/python3"}, {"data.bin"});
  CHECK_THROWS_WITH(resolve_worker_argv(spec_of("missing.py"), "/usr/bin", probe),
                    Catch::Contains("'missing.py' does not exist"));
  CHECK(exit_code_of_error(spec_of("missing.py"), probe) == xlaunch::exit_status::kNotFound);
  CHECK_THROWS_WITH(resolve_worker_argv(spec_of("nosuchtool"), "/usr/bin", probe),
                    Catch::Contains("'nosuchtool' not found on PATH"));
  CHECK(exit_code_of_error(spec_of("data.bin"), probe) == xlaunch::exit_status::kCannotExecute);
  ProgramSpec no_interpreter = spec_of("train.py");
  no_interpreter.python = "python9";
  CHECK_THROWS_WITH(resolve_worker_argv(no_interpreter, "/usr/bin", probe),
                    Catch::Contains("interpreter 'python9' not found"));
}

TEST_CASE("an interpreter path that exists but cannot run is 126, a missing one 127", "[program]") {
  auto probe = fake_probe({"/usr/bin/python3"}, {"train.py", "/etc/passwd"});
  ProgramSpec spec = spec_of("train.py");
  spec.python = "/etc/passwd";
  CHECK(exit_code_of_error(spec, probe) == xlaunch::exit_status::kCannotExecute);
  CHECK_THROWS_WITH(resolve_worker_argv(spec, "/usr/bin", probe),
                    Catch::Contains("'/etc/passwd' is not an executable file"));
  spec.python = "/opt/none/python3";
  CHECK(exit_code_of_error(spec, probe) == xlaunch::exit_status::kNotFound);
}
