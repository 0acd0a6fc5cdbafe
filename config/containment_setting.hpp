// XLAUNCH_CONTAINMENT: the orphan containment a launch must use (docs/launch.md). Parsed
// here like every other setting; launcher/containment.hpp sets the mechanism up.
#pragma once

#include <string_view>

#include "config/env_settings.hpp"

namespace xlaunch::config {

/// The environment variable that forces a mechanism.
inline constexpr std::string_view kContainmentVariable = "XLAUNCH_CONTAINMENT";

/// auto: the best that works here (cgroup, else PID namespace, else process groups); the
/// others force one mechanism.
enum class ContainmentRequest { Auto, Cgroup, PidNamespace, ProcessGroup };

/// XLAUNCH_CONTAINMENT as `getenv` has it: unset or empty → Auto, else auto|cgroup|pidns|group.
/// Throws UsageError (exit 2) naming the variable and the accepted values otherwise.
ContainmentRequest containment_request(const Getenv& getenv);

}  // namespace xlaunch::config
