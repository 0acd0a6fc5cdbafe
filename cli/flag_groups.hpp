// Flags in CLI11 option groups, by --help heading. CLI11 checks each new flag's names against
// every flag of its own group before it, so one group of ~200 flags made building
// `xlaunch launch` most of a launch's start-up; groups of a few dozen keep it small. The
// groups print as the plain headings one flat command would show.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "config/argparse_words.hpp"
#include "config/usage_error.hpp"

namespace xlaunch::cli {

/// The option group of `cmd` that takes the next flag under help heading `heading`: a new one
/// when the last one with that heading is full.
CLI::App& flag_group(CLI::App& cmd, const std::string& heading);

/// Every flag of `cmd`, its own and its groups', in the order they were added.
std::vector<const CLI::Option*> every_option(const CLI::App& cmd);

/// The flag of `cmd` (its own or a group's) with long name --`name`, or nullptr.
const CLI::Option* find_flag(const CLI::App& cmd, std::string_view name);

/// `cmd`'s flags for the argparse walk (config/argparse_words.hpp): by spelling, or by the
/// beginning of one flag's long names.
config::FindFlag flags_of(const CLI::App& cmd);

/// The error for a flag `given` that `xlaunch <command>` does not have, with the closest
/// spelling it has as a hint.
UsageError unknown_flag(const CLI::App& cmd, const std::string& given, std::string_view command);

/// Prints the groups' flags under their headings, as CLI11 prints a command's own (for a
/// command without subcommands of its own, as `launch` and `test` are).
class FlagGroupsFormatter : public CLI::Formatter {
 public:
  std::string make_subcommands(const CLI::App* app, CLI::AppFormatMode) const override;
};

}  // namespace xlaunch::cli
