// What `xlaunch env` says about the Python that runs .py programs: its path, its version and
// the torch and accelerate versions it imports.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace xlaunch::launcher {

struct PythonInfo {
  std::string interpreter;          ///< as configured (--python, XLAUNCH_PYTHON, config, python3)
  std::optional<std::string> path;  ///< resolved executable; nullopt: not found
  std::optional<std::string> version;  ///< "3.11.2"
  std::string torch = "not importable";
  std::string accelerate = "not importable";
  std::string problem;  ///< why it could not be asked (empty when it answered)
};

/// The script probe_python runs: one "key=value" line each for version, torch, accelerate.
extern const char* const kPythonProbeScript;

/// Reads the script's output into `info`. Pure.
void parse_python_probe(std::string_view output, PythonInfo& info);

/// "/usr/bin/python3 (3.11.2), torch 1.13.0, accelerate not importable" and the like.
std::string describe(const PythonInfo& info);

/// Finds `interpreter` on `path_var` and runs the probe script (stdin closed, output read).
PythonInfo probe_python(const std::string& interpreter, const std::string& path_var);

}  // namespace xlaunch::launcher
