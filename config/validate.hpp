// Turning a parsed YAML document into Settings: every key is checked against the schema,
// every problem is collected (with its line and column), and then reported at once.
#pragma once

#include <yaml-cpp/yaml.h>

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "config/settings.hpp"

namespace xlaunch::config {

/// The settings a config file gives, and what the user should be told about it.
struct LoadedConfig {
  Settings settings;
  /// "FILE:LINE:COL: ignoring deepspeed_config (...)", unknown-key warnings, and the like.
  std::vector<std::string> notices;
  /// "FILE:LINE:COL" of each schema key's value, for messages about it later on.
  std::map<std::string, std::string> places;
};

/// Checks `root` (parsed from `origin`, a file name used in messages) against the schema.
/// Throws one UsageError listing every problem, each as
/// "ORIGIN:LINE:COL: key 'x': bad value 'y' (allowed: ...)". An empty document is valid.
LoadedConfig validate_document(const YAML::Node& root, const std::string& origin);

/// `text` with control characters escaped (\n, \t, \0, \x1b...), so a bad value shows on
/// one line exactly as it was given; past 256 bytes, its first 200 and its length.
std::string printable(std::string_view text);

/// "ORIGIN:LINE:COL" of a YAML node (1-based, as editors count), or ORIGIN without a mark.
std::string where(const std::string& origin, const YAML::Mark& mark);
/// The value as the user wrote it, for messages: scalars verbatim, the rest in flow style.
std::string shown(const YAML::Node& node);

/// Throws UsageError("<title> (N problems):\n<one per line>", hint) when `problems` is not
/// empty; does nothing otherwise.
void throw_if_problems(std::string_view title, const std::vector<std::string>& problems,
                       std::string_view hint);

}  // namespace xlaunch::config
