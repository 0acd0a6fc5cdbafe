// accelerate launch's own flags (--use_fsdp, --fsdp_*, --use_deepspeed, --zero_stage,
// --dynamo_*, --fp8_*, --num_cpu_threads_per_process, -q/--quiet, --same_network, ...), so
// that an `accelerate launch` command line works under `xlaunch launch` unchanged. Each
// becomes an accelerate launch argument (config/accelerate_keys.hpp), is accepted with a
// note where it has no effect, or is refused (exit 2) where xlaunch cannot do what it asks.
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <string>

#include "config/settings.hpp"

namespace xlaunch::cli {

/// The values CLI11 fills in, by accelerate's argument name.
struct AccelerateFlags {
  std::map<std::string, std::string> values;
  std::map<std::string, bool> switches;
  /// Each flag's option, so that asking whether it was given is a lookup, not a search of
  /// the ~250 options (which made reading them back quadratic).
  std::map<std::string, const CLI::Option*, std::less<>> options;
  /// False when the command line named none of them and they were left undeclared
  /// (add_launch_flags): then none was given.
  bool declared = false;
};

/// Declares the flags on `cmd`, each as --name and --name-with-hyphens (accelerate takes both).
void add_accelerate_flags(CLI::App& cmd, AccelerateFlags& flags);

/// After parsing: puts the given flags into settings.accelerate (a paradigm flag or
/// --multi_gpu overrides the config file's paradigm), --same_network into
/// settings.same_network, prints a note for each flag without effect. Throws UsageError for
/// a bad value, a refused flag, or two of --cpu, --multi_gpu, --use_fsdp, --use_deepspeed,
/// --use_megatron_lm at once.
void finish_accelerate_flags(const CLI::App& cmd, AccelerateFlags& flags,
                             config::Settings& settings);

}  // namespace xlaunch::cli
