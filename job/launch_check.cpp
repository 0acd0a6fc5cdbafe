#include "job/launch_check.hpp"

#include "config/launch_rules.hpp"
#include "config/resolve.hpp"
#include "config/yaml_io.hpp"
#include "launcher/capacity.hpp"
#include "launcher/launch_plan.hpp"

namespace xlaunch::job {

std::optional<UsageError> launch_refusal(const config::Settings& settings,
                                         const std::vector<std::string>& visible_gpus) {
  try {
    config::Resolved resolved;
    resolved.settings =
        config::load_config_text(config::to_yaml(settings), "the new config").settings;
    config::apply_launch_rules(resolved, config::is_local_host);
    // The program is not the file's business: any executable stands in for it.
    const launcher::LaunchPlan plan =
        launcher::make_plan(resolved.settings, {"/bin/true"}, visible_gpus, "config-check");
    // The fixed limits only: ulimits are the launching shell's, at launch time.
    launcher::check_capacity(plan, resolved.settings, launcher::CapacityLimits{});
  } catch (const UsageError& e) {
    return e;
  }
  return std::nullopt;
}

}  // namespace xlaunch::job
