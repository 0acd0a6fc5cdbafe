// The launcher's one entry point: `xlaunch launch` (and `xlaunch test`) call it.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "config/settings.hpp"
#include "launcher/program.hpp"

namespace xlaunch::job {

struct LaunchRequest {
  config::Settings settings;  // merged flags > environment > config file
  launcher::ProgramSpec program;
  std::optional<std::string> config_file;  // the config file read, if any (for the run line)
  /// Where each setting came from (config::sources), for messages that name it.
  std::map<std::string, std::string> sources;
};

/// Runs the whole job on this machine: finds GPUs, checks the program, binds and serves
/// the store, starts and supervises the workers, writes the logs and the summary, prints
/// the root cause of a failure. Returns the exit code (docs/launch.md). Throws UsageError
/// for a bad request (exit 2) and LaunchError for a failure before the workers start.
int launch(const LaunchRequest& request);

}  // namespace xlaunch::job
