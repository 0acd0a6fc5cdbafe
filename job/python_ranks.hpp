// Whether a run's ranks may run Python: only then is the Python stack machinery (the
// sitecustomize folder and its PYTHONPATH, PYTHONFAULTHANDLER) set up at start.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "launcher/program.hpp"

namespace xlaunch::job {

/// True unless the program is run as is (--no_python) and is a native executable (`head`,
/// its first bytes, start with the ELF magic) that is neither a Python interpreter nor a
/// shell or a wrapper that runs another program (env, srun, numactl, uv...), judged by the
/// name of `executable` (its resolved path). A script of any interpreter may start Python
/// and counts as Python; so does a file that could not be read (`head` empty). `python_stacks`
/// set to true (flag, variable or config key) makes it true whatever the program.
bool may_run_python(const launcher::ProgramSpec& spec, std::optional<bool> python_stacks,
                    const std::string& executable, std::string_view head);

/// The first few bytes of `path`; "" when it cannot be read.
std::string read_head(const std::string& path);

}  // namespace xlaunch::job
