#include "launcher/python_probe.hpp"

#include <fmt/core.h>

namespace xlaunch::launcher {

// Imports fail in many ways (missing, broken CUDA libraries); each is reported, never raised.
const char* const kPythonProbeScript =
    "import sys\n"
    "print('version=' + sys.version.split()[0])\n"
    "for name in ('torch', 'accelerate'):\n"
    "    try:\n"
    "        module = __import__(name)\n"
    "        print(name + '=' + str(getattr(module, '__version__', 'unknown version')))\n"
    "    except BaseException as e:\n"
    "        print(name + '=not importable (' + type(e).__name__ + ')')\n";

void parse_python_probe(std::string_view output, PythonInfo& info) {
  std::size_t start = 0;
  while (start < output.size()) {
    std::size_t end = output.find('\n', start);
    if (end == std::string_view::npos) end = output.size();
    const std::string_view line = output.substr(start, end - start);
    start = end + 1;
    const std::size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view key = line.substr(0, eq);
    const std::string value(line.substr(eq + 1));
    if (key == "version") info.version = value;
    if (key == "torch") info.torch = value;
    if (key == "accelerate") info.accelerate = value;
  }
}

std::string describe(const PythonInfo& info) {
  if (!info.path) return fmt::format("{} not found", info.interpreter);
  std::string out = *info.path;
  if (info.version) out += fmt::format(" (Python {})", *info.version);
  if (!info.problem.empty()) out += fmt::format(" ({})", info.problem);
  return out;
}

}  // namespace xlaunch::launcher
