#include "job/python_ranks.hpp"

#include <array>

namespace xlaunch::job {
namespace {

// Native programs whose job is to run another one, which may well be Python.
constexpr std::array<std::string_view, 33> kRunsOthers = {
    "sh",     "bash",    "dash",    "zsh",        "ksh",     "mksh",      "fish",
    "csh",    "tcsh",    "busybox", "env",        "nice",    "nohup",     "setsid",
    "stdbuf", "taskset", "numactl", "chrt",       "ionice",  "timeout",   "time",
    "xargs",  "sudo",    "srun",    "mpirun",     "mpiexec", "apptainer", "singularity",
    "docker", "podman",  "uv",      "micromamba", "pixi"};

std::string_view base_name(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

bool may_run_python(const launcher::ProgramSpec& spec, std::optional<bool> python_stacks,
                    const std::string& executable, std::string_view head) {
  if (python_stacks.value_or(false)) return true;
  if (!spec.no_python) return true;
  if (!head.starts_with("\x7f"
                        "ELF"))
    return true;  // a script, or unreadable: maybe
  const std::string_view name = base_name(executable);
  if (name.starts_with("python") || name.starts_with("pypy")) return true;
  for (std::string_view other : kRunsOthers) {
    if (name == other) return true;
  }
  return false;
}

}  // namespace xlaunch::job
