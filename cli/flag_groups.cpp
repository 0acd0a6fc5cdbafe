#include "cli/flag_groups.hpp"

#include <fmt/core.h>

#include <algorithm>

#include "config/schema.hpp"

namespace xlaunch::cli {
namespace {

// CLI11's name checks grow with the square of a group's size; 24 keeps each group's checks
// to a few hundred string comparisons.
constexpr std::size_t kFlagsPerGroup = 24;

bool is_flag_group(const CLI::App* sub) { return sub->get_name().empty(); }

}  // namespace

CLI::App& flag_group(CLI::App& cmd, const std::string& heading) {
  const std::vector<CLI::App*> groups = cmd.get_subcommands(
      [&](CLI::App* sub) { return is_flag_group(sub) && sub->get_group() == heading; });
  if (!groups.empty() && groups.back()->get_options().size() < kFlagsPerGroup) {
    return *groups.back();
  }
  CLI::App& group = *cmd.add_option_group(heading);
  group.set_help_flag();  // the command's own -h is the one
  return group;
}

std::vector<const CLI::Option*> every_option(const CLI::App& cmd) {
  std::vector<const CLI::Option*> options = cmd.get_options();
  for (const CLI::App* sub : cmd.get_subcommands({})) {
    if (!is_flag_group(sub)) continue;
    const std::vector<const CLI::Option*> more = every_option(*sub);
    options.insert(options.end(), more.begin(), more.end());
  }
  return options;
}

const CLI::Option* find_flag(const CLI::App& cmd, std::string_view name) {
  for (const CLI::Option* option : every_option(cmd)) {
    const std::vector<std::string>& names = option->get_lnames();
    if (std::find(names.begin(), names.end(), name) != names.end()) return option;
  }
  return nullptr;
}

UsageError unknown_flag(const CLI::App& cmd, const std::string& given, std::string_view command) {
  const std::string name = given.substr(0, given.find('='));
  std::string best;
  std::size_t best_distance = 3;  // further than this is not a typo
  for (const CLI::Option* option : every_option(cmd)) {
    for (const std::string& known : option->get_lnames()) {
      const std::size_t d = config::edit_distance(name, "--" + known);
      if (d < best_distance) best_distance = d, best = "--" + known;
    }
  }
  const std::string help = fmt::format("'xlaunch {} --help'", command);
  return UsageError(fmt::format("unknown flag '{}' for 'xlaunch {}'", name, command),
                    best.empty()
                        ? fmt::format("run {} for every flag", help)
                        : fmt::format("did you mean {}? ({} lists every flag)", best, help));
}

std::string FlagGroupsFormatter::make_subcommands(const CLI::App* app, CLI::AppFormatMode) const {
  std::vector<std::string> headings;
  for (const CLI::App* sub : app->get_subcommands({})) {
    if (is_flag_group(sub) &&
        std::find(headings.begin(), headings.end(), sub->get_group()) == headings.end()) {
      headings.push_back(sub->get_group());
    }
  }
  std::string out;
  for (const std::string& heading : headings) {
    std::vector<const CLI::Option*> options;
    for (const CLI::App* sub : app->get_subcommands({})) {
      if (!is_flag_group(sub) || sub->get_group() != heading) continue;
      const std::vector<const CLI::Option*> more = sub->get_options();
      options.insert(options.end(), more.begin(), more.end());
    }
    out += "\n" + make_group(heading, false, options);
  }
  return out;
}

config::FindFlag flags_of(const CLI::App& cmd) {
  return [&cmd](std::string_view spelling) -> std::optional<config::KnownFlag> {
    if (const CLI::Option* exact = cmd.get_option_no_throw(std::string(spelling))) {
      return config::KnownFlag{std::string(spelling), exact->get_expected_min() > 0};
    }
    if (!spelling.starts_with("--") || spelling.size() < 3) return std::nullopt;
    const std::string_view prefix = spelling.substr(2);
    const CLI::Option* found = nullptr;
    std::string name;
    for (const CLI::Option* option : every_option(cmd)) {
      for (const std::string& long_name : option->get_lnames()) {
        if (!long_name.starts_with(prefix)) continue;
        if (found != nullptr && found != option) return std::nullopt;  // two flags begin so
        found = option;
        if (name.empty()) name = "--" + long_name;
      }
    }
    if (found == nullptr) return std::nullopt;
    return config::KnownFlag{name, found->get_expected_min() > 0};
  };
}

}  // namespace xlaunch::cli
