// Reading config files (yaml-cpp, keeping every node's line and column) and writing them.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "config/settings.hpp"
#include "config/validate.hpp"

namespace xlaunch::config {

/// Parses YAML text. Malformed YAML is a UsageError "ORIGIN:LINE:COL: malformed YAML: ...".
YAML::Node parse_yaml(const std::string& text, const std::string& origin);

/// A file's whole contents. A missing or unreadable file is a UsageError naming it.
std::string read_text_file(const std::string& path);

/// parse_yaml + validate_document. `origin` names the text in messages.
LoadedConfig load_config_text(const std::string& text, const std::string& origin);

/// Reads, parses and validates the config file at `path`.
LoadedConfig load_config_file(const std::string& path);

/// The YAML for `settings`: the keys it sets, in schema order (accelerate's first), after a
/// comment naming the writer. Round-trips through load_config_text.
std::string to_yaml(const Settings& settings);

/// The file save_config(path) replaces: a link's final target, so a config kept elsewhere (a
/// dotfiles repository) stays linked, else `path` itself. Throws UsageError for an empty path,
/// a folder, or a link loop, so a wizard can refuse before it asks anything.
std::string config_write_target(const std::string& path);

/// Writes to_yaml(settings) to config_write_target(path) atomically (see atomic_write).
void save_config(const std::string& path, const Settings& settings);

}  // namespace xlaunch::config
