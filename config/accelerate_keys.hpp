// accelerate's launch arguments that change a worker's environment (FSDP, DeepSpeed,
// Megatron-LM, torch.compile, FP8, CPU threads) and the config sections that set them
// (fsdp_config, deepspeed_config, megatron_lm_config, dynamo_config, fp8_config). One table
// serves the config file reader, the launch flags and docs/config.md.
#pragma once

#include <yaml-cpp/yaml.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xlaunch::config {

/// accelerate launch arguments by name ("fsdp_sharding_strategy" -> "FULL_SHARD"), each value
/// in canonical text (see normalize_accelerate_value). Settings::accelerate holds one.
using AccelerateArgs = std::map<std::string, std::string>;

enum class ArgKind { Switch, Bool, Integer, Number, Choice, Text };

/// One accelerate launch argument.
struct AccelerateArg {
  std::string_view name;     ///< accelerate's argument name, also the flag: --NAME
  std::string_view section;  ///< config section it may appear in ("fsdp_config"), or ""
  ArgKind kind;
  std::string_view choices;  ///< Choice: "|"-separated, canonical spellings
  std::string_view help;
};

/// Every argument, in docs order.
const std::vector<AccelerateArg>& accelerate_args();

/// The argument called `name`, or nullptr.
const AccelerateArg* find_accelerate_arg(std::string_view name);

/// `text` in canonical form: Switch/Bool "true"/"false" (YAML 1.1 and accelerate spellings:
/// true/yes/on/1...), Integer as digits, Number as given, Choice in its canonical case,
/// Text as given. nullopt when the text is not allowed.
std::optional<std::string> normalize_accelerate_value(const AccelerateArg& arg,
                                                      std::string_view text);

/// What `arg` allows, for messages: "true or false", "one of: none, cpu, nvme".
std::string allowed_values(const AccelerateArg& arg);

/// The name of the Args entry that records the deepspeed_config keys a file gave (accelerate
/// exports them as ACCELERATE_CONFIG_DS_FIELDS).
inline constexpr std::string_view kDeepSpeedFields = "deepspeed_fields_from_accelerate_config";

/// The Args entry ("true") saying --mixed_precision was given: accelerate then leaves
/// mixed_precision out of ACCELERATE_CONFIG_DS_FIELDS, since the file's value did not count.
inline constexpr std::string_view kMixedPrecisionFlag = "mixed_precision_from_flag";

/// Whether `key` is a top-level config key this file reads: the sections, enable_cpu_affinity,
/// num_cpu_threads_per_process and accelerate's old top-level dynamo_backend.
bool is_accelerate_config_key(std::string_view key);

/// Reads one such key of a config file (whose document is `root`) into `into`. `origin`
/// names the file. Bad values go
/// to `problems` as "FILE:LINE:COL: key 'fsdp_config.fsdp_version': bad value '3' (allowed:
/// ...)"; keys accelerate would ignore go to `notices` (with a did-you-mean).
void read_accelerate_key(const std::string& key, const YAML::Node& value, const YAML::Node& root,
                         const std::string& origin, AccelerateArgs& into,
                         std::vector<std::string>& problems, std::vector<std::string>& notices);

/// For `config show`: "\naccelerate launch arguments:\n" and one "name  value" line per
/// argument in `args`, in name order; "" when there is none.
std::string format_accelerate_args(const AccelerateArgs& args);

/// One key of a config file that holds an accelerate argument: the section it lies in
/// ("fsdp_config"; "" for the top level), its name there and its canonical value.
struct AccelerateFileKey {
  std::string section;
  std::string name;
  std::string value;
  bool text = false;  ///< a path, a name or a choice: quoted where YAML would read another type
};

/// The keys a config file needs to give `args` again, sections' keys together: what a config
/// written from settings read from an accelerate file keeps. The paradigm switches are left
/// out (distributed_type names the paradigm), and so are bookkeeping entries and arguments
/// only a flag gives.
std::vector<AccelerateFileKey> accelerate_file_keys(const AccelerateArgs& args);

/// accelerate's distributed_type values that are a training paradigm on top of MULTI_GPU:
/// "fsdp" -> "use_fsdp", "deepspeed" -> "use_deepspeed", "megatron_lm" -> "use_megatron_lm"
/// (case-insensitive); nullopt for others.
std::optional<std::string> paradigm_switch(std::string_view distributed_type);

/// Sets use_fsdp, use_deepspeed and use_megatron_lm: "true" for `paradigm` (one of those
/// names), "false" for the others, so that a higher source replaces a lower one's choice.
void select_paradigm(AccelerateArgs& args, const std::optional<std::string>& paradigm);

/// The paradigm `args` selects ("FSDP", "DEEPSPEED", "MEGATRON_LM"), or nullopt.
std::optional<std::string> selected_paradigm(const AccelerateArgs& args);

}  // namespace xlaunch::config
