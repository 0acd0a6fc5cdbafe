// Whether a config file would launch on this machine: what `xlaunch config` and `xlaunch
// config default` ask before they write one, so that no file they write is refused by the
// `xlaunch launch` that reads it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/settings.hpp"
#include "config/usage_error.hpp"

namespace xlaunch::job {

/// Runs the checks `xlaunch launch` makes before it starts anything — the file's own
/// validation (as written by to_yaml), the launch rules, this machine's plan with
/// `visible_gpus` — on `settings`, as if they were the whole config file and nothing else
/// were given. Returns the UsageError launch would throw, or nullopt when it would launch.
std::optional<UsageError> launch_refusal(const config::Settings& settings,
                                         const std::vector<std::string>& visible_gpus);

}  // namespace xlaunch::job
