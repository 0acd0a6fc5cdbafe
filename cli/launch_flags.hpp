// The flags of `xlaunch launch` (also taken by `xlaunch test`): accelerate's names with
// torchrun's spellings as aliases.
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cli/accelerate_flags.hpp"
#include "config/settings.hpp"

namespace xlaunch::cli {

struct LaunchFlags {
  /// Config-key flags as typed (key → text); the config schema parses and checks them.
  std::map<std::string, std::string> raw;
  bool multi_gpu = false;
  config::Settings settings;         // only what the command line said (after finish_launch_flags)
  std::vector<std::string> notices;  // what to say of values it took (finish_launch_flags)
  std::optional<std::string> config_file;
  bool module = false;
  bool no_python = false;
  bool standalone = false;
  /// The command line spells a flag only torchrun has (--standalone, --nnodes, --master_addr,
  /// ...): it is torchrun's, and gets torchrun's default of one worker per machine.
  bool torchrun_spelling = false;
  AccelerateFlags accelerate;  // accelerate launch's own flags (cli/accelerate_flags.hpp)
  bool run_path = false;  // torchrun's --run_path: PROGRAM is a Python script, whatever its name
  bool dry_run = false;   // print the resolved settings and the worker command; start nothing
  /// torchrun's flags that change nothing here (--monitor_interval, ...), as given.
  std::map<std::string, std::string> no_op;
  /// The options of `raw` and `no_op` by name: reading them back is a lookup, not a search
  /// of every option.
  std::map<std::string, const CLI::Option*, std::less<>> options;
};

/// Declares every launch flag on `cmd`, each in accelerate's/torchrun's underscored spelling
/// and torchrun's dashed one (--nproc_per_node and --nproc-per-node); values land in `flags`
/// after parsing, once finish_launch_flags() has run. accelerate's own flags (three quarters
/// of them, and of the time it takes CLI11 to declare them) only when the command line,
/// `words` (what follows the command's name), may name one; nullopt: always.
void add_launch_flags(CLI::App& cmd, LaunchFlags& flags,
                      std::optional<std::span<const std::string_view>> words = std::nullopt);

/// Copies the flags that were given into flags.settings (call after parsing). Throws
/// UsageError for a value outside its allowed set.
void finish_launch_flags(CLI::App& cmd, LaunchFlags& flags);

/// The settings a launch starts from: flags > XLAUNCH_* environment > torchrun's PET_*
/// environment > config file (the --config_file one, else the default file when it exists),
/// with --rdzv_endpoint mapped onto the store address. Prints config notices and warnings
/// once. Throws UsageError listing every problem, or naming a contradiction. The config file
/// that was read, if any, goes to `*config_file_read` when given (for the run line), and
/// where each setting came from to `*sources` (config::sources, for messages).
config::Settings resolve_launch_settings(const LaunchFlags& flags,
                                         std::optional<std::string>* config_file_read = nullptr,
                                         std::map<std::string, std::string>* sources = nullptr);

}  // namespace xlaunch::cli
