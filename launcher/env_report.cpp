#include "launcher/env_report.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace xlaunch::launcher {

std::string cuda_version_text(int version) {
  return fmt::format("{}.{}", version / 1000, (version % 1000) / 10);
}

std::string nccl_version_text(int version) {
  // NCCL ≥ 2.9 encodes major*10000 + minor*100 + patch; older releases major*1000 + minor*100.
  if (version >= 10000) {
    return fmt::format("{}.{}.{}", version / 10000, (version % 10000) / 100, version % 100);
  }
  return fmt::format("{}.{}.{}", version / 1000, (version % 1000) / 100, version % 100);
}

std::string format_env_report(const EnvReport& r) {
  auto gib = [](std::uint64_t bytes) { return bytes / double(1ull << 30); };
  std::string out = "```\n";
  out += fmt::format("xlaunch:               {} ({})\n", r.xlaunch_version, r.build);
  out += fmt::format("OS:                    {}\n", r.system.os);
  out += fmt::format("kernel:                {}\n", r.system.kernel);
  out += fmt::format("host:                  {}\n", r.system.hostname);
  out += fmt::format("CPUs:                  {}\n", r.system.cpus);
  out += fmt::format("memory:                {:.1f} GiB\n", gib(r.system.memory_bytes));
  if (!r.nvml) {
    out += "GPUs (NVML):           none found (libnvidia-ml.so.1 not loadable or no driver)\n";
  } else {
    out += fmt::format("NVIDIA driver:         {}\n",
                       r.nvml->driver_version.empty() ? "?" : r.nvml->driver_version);
    out += fmt::format("GPUs (NVML):           {}\n", r.nvml->gpus.size());
    for (const gpu::GpuInfo& gpu : r.nvml->gpus) {
      bool bf16 = gpu.compute_major >= 8;
      out += fmt::format("  [{}] {}, {:.1f} GiB, compute capability {}.{}, bf16 {}, {}\n",
                         gpu.index, gpu.name, gib(gpu.memory_bytes), gpu.compute_major,
                         gpu.compute_minor, bf16 ? "yes" : "no", gpu.uuid);
    }
  }
  out += fmt::format("CUDA driver API:       {}\n",
                     r.system.cuda_driver_version ? cuda_version_text(*r.system.cuda_driver_version)
                                                  : "not found");
  out +=
      fmt::format("CUDA runtime:          {}\n",
                  r.system.cuda_runtime_version ? cuda_version_text(*r.system.cuda_runtime_version)
                                                : "not found");
  out +=
      fmt::format("NCCL:                  {}\n",
                  r.system.nccl_version ? nccl_version_text(*r.system.nccl_version) : "not found");
  out += fmt::format("CUDA_VISIBLE_DEVICES:  {}\n",
                     r.cuda_visible_devices ? fmt::format("\"{}\"", *r.cuda_visible_devices)
                                            : std::string("(unset)"));
  out += fmt::format("GPUs for workers:      {}\n",
                     r.visible_gpus.empty() ? std::string("none (CPU workers)")
                                            : fmt::format("{}", fmt::join(r.visible_gpus, ",")));
  if (r.python) {
    out += fmt::format("Python for .py:        {}\n", describe(*r.python));
    out += fmt::format("  torch:               {}\n", r.python->torch);
    out += fmt::format("  accelerate:          {}\n", r.python->accelerate);
  }
  out +=
      fmt::format("cluster:               {}\n", r.cluster.empty() ? "none detected" : r.cluster);
  if (!r.containment.empty()) out += fmt::format("orphan containment:    {}\n", r.containment);
  if (!r.config_file) {
    out += "config file:           none\n";
  } else {
    out += fmt::format("config file:           {}\n", *r.config_file);
    if (r.config_text) {
      out += "--- config ---\n" + *r.config_text;
      if (!r.config_text->empty() && r.config_text->back() != '\n') out += "\n";
      out += "--------------\n";
    }
  }
  out += "```\n";
  return out;
}

}  // namespace xlaunch::launcher
