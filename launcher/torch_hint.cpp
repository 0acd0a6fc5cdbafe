#include "launcher/torch_hint.hpp"

#include <fmt/format.h>

#include <chrono>

#include "config/text.hpp"

namespace xlaunch::launcher {

namespace {

// Python's own words when `import torch` finds nothing.
constexpr std::string_view kNoTorch = "No module named 'torch'";

}  // namespace

bool failed_importing_torch(const RootCause& cause) {
  const WorkerOutcome& w = cause.worker;
  if (!failed(w) || !w.end || *w.end - w.start > std::chrono::seconds(30)) return false;
  for (const std::string& line : cause.stderr_tail) {
    if (line.find(kNoTorch) != std::string::npos) return true;
  }
  return false;
}

std::vector<std::string> python_candidates(const Environment& env) {
  std::vector<std::string> out;
  for (const char* prefix : {"VIRTUAL_ENV", "CONDA_PREFIX"}) {
    const std::optional<std::string> dir = lookup(env, prefix);
    if (!dir || dir->empty()) continue;
    out.push_back(*dir + "/bin/python3");
    out.push_back(*dir + "/bin/python");
  }
  const std::string path = lookup(env, "PATH").value_or("");  // split's views point into it
  for (std::string_view dir : config::split(path, ':')) {
    if (dir.empty()) continue;  // the current directory: not a place to suggest
    for (const char* name : {"python3", "python"}) out.push_back(fmt::format("{}/{}", dir, name));
    for (int minor = 8; minor <= 14; ++minor)
      out.push_back(fmt::format("{}/python3.{}", dir, minor));
  }
  return out;
}

std::string torch_missing_hint(const std::string& ran,
                               const std::optional<std::string>& with_torch) {
  std::string out = fmt::format(
      "xlaunch: hint: the workers ran {}, which cannot import torch (No module named "
      "'torch')\n",
      ran);
  if (with_torch) {
    return out + fmt::format(
                     "xlaunch: hint: {0} has torch: run with --python {0} (or set "
                     "XLAUNCH_PYTHON={0}, or 'python: {0}' in the config file)\n",
                     *with_torch);
  }
  return out + fmt::format(
                   "xlaunch: hint: no other Python on PATH or in the active virtual "
                   "environment or conda prefix has torch: install it for this one ({} -m pip "
                   "install torch), or choose the interpreter with --python PATH, "
                   "XLAUNCH_PYTHON or the config key 'python'\n",
                   ran);
}

}  // namespace xlaunch::launcher
