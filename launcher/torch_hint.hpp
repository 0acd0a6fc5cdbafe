// When every rank dies at once with "No module named 'torch'", the interpreter was the wrong
// one more often than torch is missing: say which one ran, how to choose another and which
// Python on PATH or in the active venv/conda prefix has torch.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/environment.hpp"
#include "launcher/report.hpp"

namespace xlaunch::launcher {

/// True when the failed worker's last stderr lines say Python could not import torch and it
/// ended within its first 30 seconds (an import at start, not a late one in a subprocess).
bool failed_importing_torch(const RootCause& cause);

/// Interpreters worth asking, in order: the active virtual environment's ($VIRTUAL_ENV) and
/// conda prefix's ($CONDA_PREFIX) python3 and python, then python3, python and python3.N on
/// each PATH directory. Paths as named (not resolved); duplicates kept. Pure.
std::vector<std::string> python_candidates(const Environment& env);

/// The hint lines ("xlaunch: hint: ..."): `ran` is the interpreter that ran; `with_torch`
/// another one found to have torch, if any. Pure.
std::string torch_missing_hint(const std::string& ran,
                               const std::optional<std::string>& with_torch);

/// The first of python_candidates(env) that is another program than `ran` and finds torch
/// (importlib's find_spec: torch is located, not imported). Runs each candidate once, with a
/// time limit; at most a handful are asked.
std::optional<std::string> find_python_with_torch(const Environment& env, const std::string& ran);

}  // namespace xlaunch::launcher
