// Preloading (docs/launch.md, "Preloading"): a template process per machine imports the
// modules --preload names once, and each Python rank is forked from it. Pure: what the
// template runs and gets; preload_template_posix.cpp starts it and asks it for ranks.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/environment.hpp"
#include "launcher/launch_plan.hpp"

namespace xlaunch::launcher {

/// Why the ranks of `plan` start on their own although --preload names modules (a program
/// that is not Python, a PID namespace that would adopt the ranks instead of the launcher);
/// nullopt when a template can serve them.
std::optional<std::string> preload_not_applicable(const LaunchPlan& plan, bool pid_namespace);

/// The template's command line: the ranks' interpreter with its options, the template's
/// source, the modules, and after "--" what each rank runs.
std::vector<std::string> preload_template_argv(const std::vector<std::string>& rank_argv,
                                               const std::vector<std::string>& modules);

/// The template's environment, which its imports read: the entries every rank of this
/// machine shares, without those xlaunch sets per rank (RANK, LOCAL_RANK, ...).
Environment preload_template_env(const std::vector<Environment>& rank_envs);

/// The template's Python source (preload_source.cpp).
std::string_view preload_template_source();

}  // namespace xlaunch::launcher
