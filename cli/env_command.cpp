#include <fmt/core.h>

#include <cstdlib>

#include "cli/commands.hpp"
#include "cluster/detect.hpp"
#include "config/containment_setting.hpp"
#include "config/paths.hpp"
#include "config/regular_file.hpp"
#include "config/resolve.hpp"
#include "config/usage_error.hpp"
#include "gpu/devices.hpp"
#include "launcher/containment.hpp"
#include "launcher/default_python.hpp"
#include "launcher/env_report.hpp"
#include "launcher/environment.hpp"
#include "launcher/python_probe.hpp"
#include "launcher/run_files.hpp"

namespace xlaunch::cli {
namespace {

std::string build_description() {
  std::string text = fmt::format("{} {}", XLAUNCH_COMPILER, XLAUNCH_BUILD_TYPE);
#if defined(__SANITIZE_ADDRESS__)
  text += ", ASan+UBSan";
#endif
  return text;
}

}  // namespace

void add_env_command(CLI::App& app, Action& run) {
  auto config_file = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "env", "Print what a bug report needs: versions, OS, CPUs, GPUs, NCCL, the config");
  cmd->add_option("--config_file", *config_file, "Show this config file instead of the default");
  cmd->callback([cmd, config_file, &run] {
    run = [cmd, config_file] {
      launcher::Environment env = launcher::current_environment();
      launcher::EnvReport report;
      report.xlaunch_version = XLAUNCH_VERSION;
      report.build = build_description();
      report.system = launcher::read_system_info();
      report.nvml = gpu::query_nvml();
      report.cuda_visible_devices = launcher::lookup(env, "CUDA_VISIBLE_DEVICES");
      report.visible_gpus = gpu::visible_gpus(report.cuda_visible_devices, report.nvml);
      cluster::ClusterDetection cluster = cluster::detect_cluster(env);
      if (!cluster.scheduler.empty()) report.cluster = cluster::describe(cluster);
      try {
        report.containment = launcher::describe_containment(
            config::containment_request(
                [&](const std::string& name) { return launcher::lookup(env, name); }),
            launcher::probe_containment());
      } catch (const UsageError& e) {
        report.containment = fmt::format("none: {} ({})", e.what(), e.hint());
      }
      if (cmd->get_option("--config_file")->count() > 0) {
        report.config_file = *config_file;
      } else {
        report.config_file = config::default_config_path(
            [&env](const std::string& name) { return launcher::lookup(env, name); });
      }
      if (report.config_file) {
        // A report must not wait on a FIFO or read /dev/zero forever: regular files only.
        config::RegularFile file = config::read_regular_file(*report.config_file, 4u << 20);
        if (file.status == config::RegularFile::Status::Ok) {
          report.config_text = std::move(file.text);
        } else {
          *report.config_file += file.status == config::RegularFile::Status::Missing
                                     ? " (not found)"
                                     : " (not read: not a regular file of at most 4 MiB)";
        }
      }
      // The interpreter a launch would use: --python's layers without a flag (env, file).
      std::string python = launcher::default_python();
      try {
        const auto getenv = [&env](const std::string& name) { return launcher::lookup(env, name); };
        const config::Resolved resolved =
            config::resolve({},
                            report.config_file && !report.config_file->ends_with(" (not found)")
                                ? report.config_file
                                : std::nullopt,
                            getenv);
        python = resolved.settings.python.value_or(python);
      } catch (const UsageError&) {
        // A config that does not load is shown below as it is; python3 is the fallback.
      }
      report.python =
          launcher::probe_python(python, launcher::lookup(env, "PATH").value_or("/usr/bin:/bin"));
      fmt::print("{}", launcher::format_env_report(report));
      return 0;
    };
  });
}

}  // namespace xlaunch::cli
