// The launcher's one entry point into config/: the settings a launch starts from, merged
// from the config file, XLAUNCH_* environment variables and command-line flags.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/settings.hpp"

namespace xlaunch::config {

/// Where a setting came from. Default is for callers that apply built-in defaults.
/// Where a value came from, weakest first: a stronger source wins where two say different
/// things. torchrun's PET_* variables sit below xlaunch's XLAUNCH_*.
enum class Origin { Default, File, TorchrunEnvironment, Environment, Flag };

/// "default", "file", "environment" (both kinds), "flag".
std::string_view to_string(Origin origin);

struct Resolved {
  Settings settings;                       ///< file < env < flags; no built-in defaults applied
  std::optional<std::string> config_file;  ///< the file that was read, if any
  /// For the user, one line each: ignored accelerate keys, unknown keys ("did you mean"),
  /// accepted-but-noteworthy values. Callers print them as notices; none is fatal.
  std::vector<std::string> notices;
  std::map<std::string, Origin> origins;  ///< per schema key that is set
  /// Per key from the environment: the variable that set it (XLAUNCH_X or torchrun's PET_X).
  std::map<std::string, std::string> variables;
  /// Per key from the config file: "FILE:LINE:COL" of its value.
  std::map<std::string, std::string> places;
};

/// Where each set key's value came from, for messages: "the command line", the variable
/// ("XLAUNCH_DISTRIBUTED_TYPE"), or the file's "FILE:LINE:COL". Keys left at their default
/// are absent.
std::map<std::string, std::string> sources(const Resolved& resolved);

/// flags: what the command line said; config_file_flag: --config_file if given (a missing
/// file is a UsageError); getenv: the process environment (a lookup function, so it is
/// testable). Without --config_file the default file (see default_config_path) is read only
/// when it exists. Throws UsageError listing every problem in the file or environment.
/// Reads files; no other side effects.
Resolved resolve(const Settings& flags, const std::optional<std::string>& config_file_flag,
                 const std::function<std::optional<std::string>(const std::string&)>& getenv);

}  // namespace xlaunch::config
