// What every worker runs: `.py` files under Python, `-m module`, or a program as is.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace xlaunch::launcher {

struct ProgramSpec {
  std::string program;             // script, module name (module=true) or executable
  std::vector<std::string> args;   // passed through untouched
  bool module = false;             // -m: run `python -m program`
  bool no_python = false;          // --no_python: run program as is, even a .py
  bool run_path = false;           // --run_path: program is the interpreter, args "-u FILE ..."
  std::string python = "python3";  // interpreter for .py and -m (--python, XLAUNCH_PYTHON)
};

/// How the host answers "can this be run?", injected so resolution stays pure.
struct ExecProbe {
  /// The absolute path of an executable file: `name` itself when it contains a '/', else
  /// the first match on `path_var`. nullopt when none is found.
  std::function<std::optional<std::string>(const std::string& name, const std::string& path_var)>
      find_executable;
  /// Whether `path` names a readable regular file.
  std::function<bool(const std::string& path)> is_readable_file;
  /// Whether anything is at `path` (stat succeeds): what tells "not executable" (126)
  /// from "not found" (127).
  std::function<bool(const std::string& path)> exists;
};

/// True when the program is run by the Python interpreter.
bool runs_under_python(const ProgramSpec& spec);

/// The worker's argv. Python runs unbuffered (-u) so output reaches the launcher at once.
/// argv[0] is the absolute executable path found by `probe`. Throws LaunchError naming the
/// program (or the interpreter) and what to do when it cannot be run, so that a missing
/// program is reported once before any worker starts, never as N identical crashes.
std::vector<std::string> resolve_worker_argv(const ProgramSpec& spec, const std::string& path_var,
                                             const ExecProbe& probe);

/// The probe backed by the real filesystem (access(2), stat(2)).
ExecProbe host_exec_probe();

}  // namespace xlaunch::launcher
