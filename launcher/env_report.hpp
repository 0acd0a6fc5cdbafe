// The `xlaunch env` block: everything a bug report needs, copy-pasteable. Pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpu/nvml.hpp"
#include "launcher/python_probe.hpp"
#include "launcher/system_info.hpp"

namespace xlaunch::launcher {

struct EnvReport {
  std::string xlaunch_version;
  std::string build;  // compiler, build type, sanitizers
  SystemInfo system;
  std::optional<gpu::NvmlReport> nvml;
  std::optional<std::string> cuda_visible_devices;
  std::vector<std::string> visible_gpus;   // as the launcher would use them
  std::string cluster;                     // describe(detect_cluster(...)); empty: none
  std::string containment;                 // describe_containment(...); empty: not probed
  std::optional<std::string> config_file;  // the active config file, if one exists
  std::optional<std::string> config_text;  // its content
  std::optional<PythonInfo> python;        // the interpreter .py programs run under
};

/// "13000" → "13.0", "22805" → "2.28.5" (NCCL's encodings).
std::string cuda_version_text(int version);
std::string nccl_version_text(int version);

/// The report as Markdown-friendly text (a fenced block users can paste into an issue).
std::string format_env_report(const EnvReport& report);

}  // namespace xlaunch::launcher
