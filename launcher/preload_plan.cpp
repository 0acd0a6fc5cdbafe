#include "launcher/preload_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace xlaunch::launcher {
namespace {

// Set per rank even when one rank runs here (so the intersection keeps them): the template
// must not have them, a module that reads one at import would see another rank's.
constexpr std::array<std::string_view, 7> kPerRank = {"RANK",
                                                      "LOCAL_RANK",
                                                      "GROUP_RANK",
                                                      "ROLE_RANK",
                                                      "TORCHELASTIC_ERROR_FILE",
                                                      "XLAUNCH_STACKS_DIR",
                                                      "XLAUNCH_STACKS_SIGNAL"};

}  // namespace

std::optional<std::string> preload_not_applicable(const LaunchPlan& plan, bool pid_namespace) {
  if (!plan.python_program || plan.argv.size() < 3 || plan.argv[1] != "-u") {
    return fmt::format(
        "--preload applies to Python programs (a .py file or -m MODULE); {} "
        "runs as it is",
        plan.argv.empty() ? std::string("the program") : plan.argv.front());
  }
  if (pid_namespace) {
    return "the ranks run in a PID namespace (XLAUNCH_CONTAINMENT), where the launcher cannot "
           "adopt a rank that a template forks";
  }
  return std::nullopt;
}

std::vector<std::string> preload_template_argv(const std::vector<std::string>& rank_argv,
                                               const std::vector<std::string>& modules) {
  std::vector<std::string> argv = {rank_argv.front(),
                                   "-u",
                                   "-S",
                                   "-c",
                                   std::string(preload_template_source()),
                                   fmt::format("{}", fmt::join(modules, ",")),
                                   "--"};
  argv.insert(argv.end(), rank_argv.begin() + 1, rank_argv.end());
  return argv;
}

Environment preload_template_env(const std::vector<Environment>& rank_envs) {
  if (rank_envs.empty()) return {};
  Environment shared = rank_envs.front();
  for (auto it = shared.begin(); it != shared.end();) {
    const bool everywhere =
        std::all_of(rank_envs.begin() + 1, rank_envs.end(), [&](const Environment& env) {
          const auto found = env.find(it->first);
          return found != env.end() && found->second == it->second;
        });
    const bool per_rank = std::find(kPerRank.begin(), kPerRank.end(), it->first) != kPerRank.end();
    it = everywhere && !per_rank ? std::next(it) : shared.erase(it);
  }
  return shared;
}

}  // namespace xlaunch::launcher
