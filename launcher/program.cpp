#include "launcher/program.hpp"

#include <fmt/format.h>

#include "launcher/exit_status.hpp"
#include "launcher/launch_error.hpp"

namespace xlaunch::launcher {

bool runs_under_python(const ProgramSpec& spec) {
  if (spec.no_python) return false;
  return spec.module || spec.program.ends_with(".py");
}

std::vector<std::string> resolve_worker_argv(const ProgramSpec& spec, const std::string& path_var,
                                             const ExecProbe& probe) {
  if (spec.program.empty()) {
    throw LaunchError("no program given", exit_status::kUsageError,
                      "usage: xlaunch launch [options] PROGRAM [ARGS...]");
  }
  std::vector<std::string> argv;
  if (runs_under_python(spec)) {
    auto python = probe.find_executable(spec.python, path_var);
    if (!python) {
      // A path that is there but cannot be run is 126, as in the shell; a missing one is 127.
      const bool exists = spec.python.find('/') != std::string::npos && probe.exists(spec.python);
      throw LaunchError(
          fmt::format("cannot run Python programs: interpreter '{}' {}", spec.python,
                      exists ? "is not an executable file" : "not found"),
          exists ? exit_status::kCannotExecute : exit_status::kNotFound,
          "choose one with --python /path/to/python3 or XLAUNCH_PYTHON, or run a binary with "
          "--no_python");
    }
    argv = {*python, "-u"};
    if (spec.module) {
      argv.push_back("-m");
    } else if (!probe.is_readable_file(spec.program)) {
      throw LaunchError(
          fmt::format("program '{}' does not exist or is not a readable file", spec.program),
          exit_status::kNotFound, "check the path (relative to the current directory)");
    }
    argv.push_back(spec.program);
  } else {
    auto executable = probe.find_executable(spec.program, path_var);
    if (!executable) {
      bool exists = probe.exists(spec.program);
      throw LaunchError(
          exists ? fmt::format("program '{}' is not executable", spec.program)
                 : fmt::format("program '{}' not found{}", spec.program,
                               spec.program.find('/') == std::string::npos ? " on PATH" : ""),
          exists ? exit_status::kCannotExecute : exit_status::kNotFound,
          exists ? fmt::format("chmod +x {}, or run it through its interpreter", spec.program)
          : spec.program.find('/') == std::string::npos
              ? "check the name, or give a path such as ./train"
              : "check the path (relative to the current directory)");
    }
    argv.push_back(*executable);
  }
  argv.insert(argv.end(), spec.args.begin(), spec.args.end());
  return argv;
}

}  // namespace xlaunch::launcher
