#include "launcher/env_report.hpp"

#include <catch2/catch.hpp>

using namespace xlaunch::launcher;

TEST_CASE("versions are decoded the way CUDA and NCCL encode them", "[env_report]") {
  CHECK(cuda_version_text(13000) == "13.0");
  CHECK(cuda_version_text(12040) == "12.4");
  CHECK(nccl_version_text(22805) == "2.28.5");
  CHECK(nccl_version_text(2708) == "2.7.8");
}

TEST_CASE("the env report names GPUs, versions, scoping and the config", "[env_report]") {
  EnvReport r;
  r.xlaunch_version = "0.1.0";
  r.build = "gcc 12, RelWithDebInfo";
  r.system.os = "Debian GNU/Linux 12 (bookworm)";
  r.system.cpus = 2;
  r.system.nccl_version = 22805;
  xlaunch::gpu::NvmlReport nvml;
  nvml.driver_version = "580.1";
  xlaunch::gpu::GpuInfo t4;
  t4.index = 0;
  t4.name = "Tesla T4";
  t4.compute_major = 7;
  t4.compute_minor = 5;
  t4.memory_bytes = 16ull << 30;
  nvml.gpus.push_back(t4);
  r.nvml = nvml;
  r.cuda_visible_devices = "0";
  r.visible_gpus = {"0"};
  r.config_file = "/root/.config/xlaunch/default_config.yaml";
  r.config_text = "num_processes: 2";
  r.containment = "cgroup under /sys/fs/cgroup (XLAUNCH_CONTAINMENT=auto)";
  std::string text = format_env_report(r);
  CHECK_THAT(text, Catch::Contains("[0] Tesla T4, 16.0 GiB, compute capability 7.5, bf16 no"));
  CHECK_THAT(text, Catch::Contains("NCCL:                  2.28.5"));
  CHECK_THAT(text, Catch::Contains("CUDA runtime:          not found"));
  CHECK_THAT(text, Catch::Contains("CUDA_VISIBLE_DEVICES:  \"0\""));
  CHECK_THAT(text, Catch::Contains("--- config ---\nnum_processes: 2\n---"));
  CHECK_THAT(text, Catch::Contains("orphan containment:    cgroup under /sys/fs/cgroup"));
  CHECK(text.rfind("```\n", 0) == 0);

  EnvReport bare;
  std::string none = format_env_report(bare);
  CHECK_THAT(none, Catch::Contains("none found"));
  CHECK_THAT(none, Catch::Contains("(unset)"));
  CHECK_THAT(none, Catch::Contains("none (CPU workers)"));
  CHECK_THAT(none, Catch::Contains("config file:           none"));
}

TEST_CASE("the env report names the Python for .py programs and its torch and accelerate",
          "[env_report]") {
  PythonInfo info;
  info.interpreter = "python3";
  info.path = "/usr/bin/python3";
  parse_python_probe(
      "version=3.11.2\ntorch=1.13.0a0\naccelerate=not importable (ModuleNotFoundError)\n", info);
  EnvReport report;
  report.python = info;
  const std::string text = format_env_report(report);
  CHECK_THAT(text, Catch::Contains("Python for .py:        /usr/bin/python3 (Python 3.11.2)\n"));
  CHECK_THAT(text, Catch::Contains("  torch:               1.13.0a0\n"));
  CHECK_THAT(text,
             Catch::Contains("  accelerate:          not importable (ModuleNotFoundError)\n"));
  PythonInfo missing;
  missing.interpreter = "/opt/py/bin/python3";
  CHECK(describe(missing) == "/opt/py/bin/python3 not found");
}
