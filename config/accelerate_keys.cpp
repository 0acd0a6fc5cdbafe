#include "config/accelerate_keys.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include "config/schema.hpp"
#include "config/text.hpp"
#include "config/validate.hpp"

namespace xlaunch::config {
namespace {

constexpr std::string_view kFsdp = "fsdp_config";
constexpr std::string_view kDeepSpeed = "deepspeed_config";
constexpr std::string_view kMegatron = "megatron_lm_config";
constexpr std::string_view kDynamo = "dynamo_config";
constexpr std::string_view kFp8 = "fp8_config";
constexpr std::string_view kParallelism = "parallelism_config";

const std::vector<AccelerateArg> kArgs = {
    // Resources.
    {"num_cpu_threads_per_process", "", ArgKind::Integer, "",
     "OMP_NUM_THREADS of every worker (default: yours, else 1)"},
    {"enable_cpu_affinity", "", ArgKind::Switch, "",
     "ACCELERATE_CPU_AFFINITY=1: accelerate pins each worker to the CPUs near its GPU"},
    // torch.compile.
    {"dynamo_backend", kDynamo, ArgKind::Choice,
     "NO|EAGER|AOT_EAGER|INDUCTOR|AOT_TS_NVFUSER|NVPRIMS_NVFUSER|CUDAGRAPHS|OFI|FX2TRT|ONNXRT|"
     "TENSORRT|AOT_TORCHXLA_TRACE_ONCE|TORCHXLA_TRACE_ONCE|IPEX|TVM|HPU_BACKEND",
     "torch.compile backend (ACCELERATE_DYNAMO_BACKEND; default NO)"},
    {"dynamo_mode", kDynamo, ArgKind::Choice, "default|reduce-overhead|max-autotune",
     "torch.compile mode (default: default)"},
    {"dynamo_use_fullgraph", kDynamo, ArgKind::Switch, "", "compile the whole model as one graph"},
    {"dynamo_use_dynamic", kDynamo, ArgKind::Switch, "", "trace dynamic shapes"},
    {"dynamo_use_regional_compilation", kDynamo, ArgKind::Switch, "",
     "compile repeated blocks once"},
    // Training paradigms (distributed_type FSDP / DEEPSPEED / MEGATRON_LM in a file).
    {"use_fsdp", "", ArgKind::Switch, "", "train with FSDP (ACCELERATE_USE_FSDP=true)"},
    {"use_deepspeed", "", ArgKind::Switch, "",
     "train with DeepSpeed (ACCELERATE_USE_DEEPSPEED=true); xlaunch starts the workers itself"},
    {"use_megatron_lm", "", ArgKind::Switch, "",
     "train with Megatron-LM (ACCELERATE_USE_MEGATRON_LM=true)"},
    // ND parallelism (a parallelism_config section in a file turns it on).
    {"use_parallelism_config", "", ArgKind::Switch, "",
     "data, tensor, context and sequence parallel sizes for the workers "
     "(ACCELERATE_USE_PARALLELISM_CONFIG=true)"},
    {"parallelism_config_dp_replicate_size", kParallelism, ArgKind::Integer, "",
     "replicated data parallel size (default 1)"},
    {"parallelism_config_dp_shard_size", kParallelism, ArgKind::Integer, "",
     "sharded data parallel size (default 1)"},
    {"parallelism_config_tp_size", kParallelism, ArgKind::Integer, "",
     "tensor parallel size (default 1)"},
    {"parallelism_config_cp_size", kParallelism, ArgKind::Integer, "",
     "context parallel size (default 1)"},
    {"parallelism_config_cp_backend", kParallelism, ArgKind::Text, "",
     "context parallel backend (default torch)"},
    {"parallelism_config_cp_comm_strategy", kParallelism, ArgKind::Text, "",
     "context parallel communication: allgather (default) or alltoall"},
    {"parallelism_config_sp_size", kParallelism, ArgKind::Integer, "",
     "sequence parallel size (default 1)"},
    {"parallelism_config_sp_backend", kParallelism, ArgKind::Text, "",
     "sequence parallel backend (default deepspeed)"},
    {"parallelism_config_sp_seq_length", kParallelism, ArgKind::Text, "",
     "sequence length for sequence parallelism"},
    {"parallelism_config_sp_seq_length_is_variable", kParallelism, ArgKind::Bool, "",
     "sequence lengths vary between batches (default true)"},
    {"parallelism_config_sp_attn_implementation", kParallelism, ArgKind::Text, "",
     "attention implementation with sequence parallelism (default sdpa)"},
    // DeepSpeed.
    {"deepspeed_config_file", kDeepSpeed, ArgKind::Text, "", "DeepSpeed JSON config file"},
    {"zero_stage", kDeepSpeed, ArgKind::Choice, "0|1|2|3", "ZeRO stage"},
    {"offload_optimizer_device", kDeepSpeed, ArgKind::Choice, "none|cpu|nvme",
     "where optimizer states are offloaded"},
    {"offload_param_device", kDeepSpeed, ArgKind::Choice, "none|cpu|nvme",
     "where parameters are offloaded"},
    {"offload_optimizer_nvme_path", kDeepSpeed, ArgKind::Text, "",
     "NVMe path for optimizer states (read by the DeepSpeed config, not exported)"},
    {"offload_param_nvme_path", kDeepSpeed, ArgKind::Text, "",
     "NVMe path for parameters (read by the DeepSpeed config, not exported)"},
    {"gradient_accumulation_steps", kDeepSpeed, ArgKind::Integer, "",
     "gradient accumulation steps"},
    {"gradient_clipping", kDeepSpeed, ArgKind::Number, "", "gradient clipping value"},
    {"zero3_init_flag", kDeepSpeed, ArgKind::Bool, "", "use deepspeed.zero.Init (ZeRO-3)"},
    {"zero3_save_16bit_model", kDeepSpeed, ArgKind::Bool, "", "save 16-bit weights (ZeRO-3)"},
    {"deepspeed_moe_layer_cls_names", kDeepSpeed, ArgKind::Text, "",
     "comma-separated MoE layer classes"},
    {"deepspeed_hostfile", kDeepSpeed, ArgKind::Text, "",
     "no effect: xlaunch starts every machine's workers itself"},
    {"deepspeed_exclusion_filter", kDeepSpeed, ArgKind::Text, "",
     "no effect: xlaunch starts every machine's workers itself"},
    {"deepspeed_inclusion_filter", kDeepSpeed, ArgKind::Text, "",
     "no effect: xlaunch starts every machine's workers itself"},
    {"deepspeed_multinode_launcher", kDeepSpeed, ArgKind::Choice,
     "pdsh|standard|openmpi|mvapich|mpich|nossh|slurm",
     "no effect: xlaunch starts every machine's workers itself (accelerate's 'standard')"},
    // FSDP.
    {"fsdp_version", kFsdp, ArgKind::Choice, "1|2", "FSDP version (default 1)"},
    {"fsdp_sharding_strategy", kFsdp, ArgKind::Choice,
     "FULL_SHARD|SHARD_GRAD_OP|NO_SHARD|HYBRID_SHARD|HYBRID_SHARD_ZERO2|1|2|3|4|5",
     "FSDP 1 sharding strategy (default FULL_SHARD)"},
    {"fsdp_reshard_after_forward", kFsdp, ArgKind::Text, "",
     "true/false (FSDP 2) or a sharding strategy (FSDP 1); default true"},
    {"fsdp_offload_params", kFsdp, ArgKind::Bool, "", "offload parameters to CPU (default false)"},
    {"fsdp_min_num_params", kFsdp, ArgKind::Integer, "",
     "size-based wrapping threshold (default 1e8)"},
    {"fsdp_auto_wrap_policy", kFsdp, ArgKind::Choice,
     "TRANSFORMER_BASED_WRAP|SIZE_BASED_WRAP|NO_WRAP", "auto wrap policy"},
    {"fsdp_transformer_layer_cls_to_wrap", kFsdp, ArgKind::Text, "",
     "comma-separated layer classes to wrap"},
    {"fsdp_backward_prefetch", kFsdp, ArgKind::Choice, "BACKWARD_PRE|BACKWARD_POST|NO_PREFETCH",
     "backward prefetch"},
    {"fsdp_backward_prefetch_policy", kFsdp, ArgKind::Text, "",
     "accelerate's deprecated name of fsdp_backward_prefetch; not exported"},
    {"fsdp_state_dict_type", kFsdp, ArgKind::Choice,
     "FULL_STATE_DICT|LOCAL_STATE_DICT|SHARDED_STATE_DICT", "state dict type"},
    {"fsdp_forward_prefetch", kFsdp, ArgKind::Bool, "", "forward prefetch (default false)"},
    {"fsdp_use_orig_params", kFsdp, ArgKind::Bool, "", "use original parameters (default true)"},
    {"fsdp_cpu_ram_efficient_loading", kFsdp, ArgKind::Bool, "",
     "only rank 0 loads the checkpoint (default true; needs fsdp_sync_module_states)"},
    {"fsdp_sync_module_states", kFsdp, ArgKind::Bool, "",
     "broadcast module states from rank 0 (default true)"},
    {"fsdp_activation_checkpointing", kFsdp, ArgKind::Bool, "",
     "activation checkpointing (default false)"},
    {"fsdp_ignored_modules", kFsdp, ArgKind::Text, "", "modules FSDP leaves alone"},
    // Megatron-LM.
    {"megatron_lm_tp_degree", kMegatron, ArgKind::Integer, "",
     "tensor parallel degree (default 1)"},
    {"megatron_lm_pp_degree", kMegatron, ArgKind::Integer, "",
     "pipeline parallel degree (default 1)"},
    {"megatron_lm_num_micro_batches", kMegatron, ArgKind::Integer, "", "micro batches"},
    {"megatron_lm_sequence_parallelism", kMegatron, ArgKind::Bool, "", "sequence parallelism"},
    {"megatron_lm_recompute_activations", kMegatron, ArgKind::Bool, "",
     "selective activation recomputation"},
    {"megatron_lm_use_distributed_optimizer", kMegatron, ArgKind::Bool, "",
     "distributed optimizer"},
    {"megatron_lm_gradient_clipping", kMegatron, ArgKind::Number, "",
     "gradient clipping (default 1.0)"},
    // FP8 (exported only with mixed_precision fp8).
    {"fp8_backend", kFp8, ArgKind::Choice, "te|msamp|ao", "FP8 backend"},
    {"fp8_use_autocast_during_eval", kFp8, ArgKind::Switch, "", "FP8 autocast in eval"},
    {"fp8_margin", kFp8, ArgKind::Integer, "", "scaling margin (default 0)"},
    {"fp8_interval", kFp8, ArgKind::Integer, "", "scaling interval (default 1)"},
    {"fp8_format", kFp8, ArgKind::Choice, "E4M3|E5M2|HYBRID", "FP8 format (default E4M3)"},
    {"fp8_amax_history_len", kFp8, ArgKind::Integer, "", "amax history length (default 1024)"},
    {"fp8_amax_compute_algo", kFp8, ArgKind::Choice, "max|most_recent",
     "amax algorithm (default most_recent)"},
    {"fp8_override_linear_precision", kFp8, ArgKind::Text, "",
     "three booleans for fprop,dgrad,wgrad (default false,false,false)"},
    {"fp8_opt_level", kFp8, ArgKind::Choice, "O1|O2", "MS-AMP level (default O2)"},
};

std::vector<std::string_view> split_choices(std::string_view choices) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start <= choices.size()) {
    const std::size_t bar = std::min(choices.find('|', start), choices.size());
    out.push_back(choices.substr(start, bar - start));
    start = bar + 1;
  }
  return out;
}

/// Counts that must be at least 1 (a thread count of 0, a parallel degree of 0...).
bool positive_count(std::string_view name) {
  for (std::string_view n :
       {"num_cpu_threads_per_process", "gradient_accumulation_steps", "megatron_lm_tp_degree",
        "megatron_lm_pp_degree", "megatron_lm_num_micro_batches", "fp8_interval",
        "fp8_amax_history_len", "parallelism_config_dp_replicate_size",
        "parallelism_config_dp_shard_size", "parallelism_config_tp_size",
        "parallelism_config_cp_size", "parallelism_config_sp_size"}) {
    if (n == name) return true;
  }
  return false;
}

/// accelerate copies section keys onto its arguments; fsdp_config and fp8_config keys may
/// leave out their prefix ("sharding_strategy" sets fsdp_sharding_strategy).
std::string argument_name(std::string_view section, const std::string& key) {
  if (section == kFsdp && key.find("fsdp") == std::string::npos) return "fsdp_" + key;
  if (section == kFp8 && key.find("fp8") == std::string::npos) return "fp8_" + key;
  return key;
}

std::optional<std::string> closest_in_section(std::string_view section, std::string_view name) {
  std::optional<std::string> best;
  std::size_t best_distance = std::max<std::size_t>(2, name.size() / 3) + 1;
  for (const AccelerateArg& arg : kArgs) {
    if (arg.section != section) continue;
    const std::size_t d = edit_distance(name, arg.name);
    if (d < best_distance) best_distance = d, best = std::string(arg.name);
  }
  return best;
}

/// A scalar as text, or a list of scalars joined with commas (accelerate's plugins split
/// class-name lists on commas); nullopt for anything else.
std::optional<std::string> value_text(const YAML::Node& value) {
  if (value.IsScalar()) return value.Scalar();
  if (!value.IsSequence()) return std::nullopt;
  std::string out;
  for (const YAML::Node& item : value) {
    if (!item.IsScalar()) return std::nullopt;
    if (!out.empty()) out += ',';
    out += item.Scalar();
  }
  return out;
}

void read_value(const AccelerateArg& arg, const std::string& shown_key, const YAML::Node& value,
                const std::string& origin, AccelerateArgs& into,
                std::vector<std::string>& problems) {
  if (value.IsNull()) return;  // accelerate: None, the argument's default
  const auto text = value_text(value);
  const auto normal = text ? normalize_accelerate_value(arg, *text) : std::nullopt;
  if (!normal) {
    problems.push_back(fmt::format("{}: key '{}': bad value '{}' (allowed: {})",
                                   where(origin, value.Mark()), shown_key, shown(value),
                                   allowed_values(arg)));
    return;
  }
  into[std::string(arg.name)] = *normal;
}

void read_section(std::string_view section, const YAML::Node& value, const YAML::Node& root,
                  const std::string& origin, AccelerateArgs& into,
                  std::vector<std::string>& problems, std::vector<std::string>& notices) {
  if (value.IsNull()) return;
  if (!value.IsMap()) {
    problems.push_back(
        fmt::format("{}: key '{}': bad value '{}' (allowed: a mapping of {} keys, "
                    "as 'accelerate config' writes it)",
                    where(origin, value.Mark()), section, shown(value), section));
    return;
  }
  std::string ds_fields;
  for (const auto& entry : value) {
    if (!entry.first.IsScalar()) {
      notices.push_back(
          fmt::format("{}: a key of '{}' that is not a name (a list or a mapping); ignored",
                      where(origin, entry.first.Mark()), section));
      continue;
    }
    const std::string key = entry.first.Scalar();
    const std::string shown_key = fmt::format("{}.{}", section, key);
    if (section == kDeepSpeed) ds_fields += (ds_fields.empty() ? "" : ",") + key;
    const std::string name = argument_name(section, key);
    const AccelerateArg* arg = find_accelerate_arg(name);
    if (arg == nullptr && section == kFp8 &&
        !std::all_of(name.begin(), name.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '_'; })) {
      // Its variable would be ACCELERATE_<NAME>: "a=b" would set another one.
      notices.push_back(
          fmt::format("{}: key '{}' is no variable name (letters, digits and _ only); ignored",
                      where(origin, entry.first.Mark()), shown_key));
      continue;
    }
    if (arg == nullptr && section == kFp8) {
      // accelerate exports every fp8_* argument, known or not, as ACCELERATE_FP8_*.
      const auto suggestion = closest_in_section(section, name);
      if (suggestion) {
        notices.push_back(
            fmt::format("{}: key '{}' is exported as ACCELERATE_{}; did you mean '{}'?",
                        where(origin, entry.first.Mark()), shown_key, name, *suggestion));
      }
      if (const auto text = entry.second.IsNull() ? std::nullopt : value_text(entry.second)) {
        const auto b = parse_boolean(*text);
        into[name] = b && !parse_number(*text) ? (*b ? "True" : "False") : *text;
      }
      continue;
    }
    if (arg == nullptr || arg->section != section) {
      const auto suggestion = closest_in_section(section, name);
      notices.push_back(fmt::format(
          "{}: key '{}' is not one that accelerate launch exports; ignored{}",
          where(origin, entry.first.Mark()), shown_key,
          suggestion ? fmt::format(" (did you mean '{}'?)", *suggestion) : std::string()));
      continue;
    }
    read_value(*arg, shown_key, entry.second, origin, into, problems);
  }
  if (section == kDeepSpeed && !ds_fields.empty()) {
    // accelerate adds mixed_precision when the file (not a flag) gave it.
    if (root.IsMap() && root["mixed_precision"] && !root["mixed_precision"].IsNull())
      ds_fields += ",mixed_precision";
    into[std::string(kDeepSpeedFields)] = ds_fields;
  }
}

}  // namespace

const std::vector<AccelerateArg>& accelerate_args() { return kArgs; }

const AccelerateArg* find_accelerate_arg(std::string_view name) {
  for (const AccelerateArg& arg : kArgs) {
    if (arg.name == name) return &arg;
  }
  return nullptr;
}

std::optional<std::string> normalize_accelerate_value(const AccelerateArg& arg,
                                                      std::string_view text) {
  const std::string_view t = trim(text);
  switch (arg.kind) {
    case ArgKind::Switch:
    case ArgKind::Bool: {
      const auto b = parse_boolean(t);
      if (!b) return std::nullopt;
      return std::string(*b ? "true" : "false");
    }
    case ArgKind::Integer: {
      // accelerate's own default for fsdp_min_num_params is written 1e8; accept whole numbers.
      const auto n = parse_number(t);
      // Bounded before the cast, which is undefined for values a long long cannot hold.
      if (!n || *n < (positive_count(arg.name) ? 1 : 0) || *n > 1e15 || *n != std::floor(*n))
        return std::nullopt;
      return std::to_string(static_cast<long long>(*n));
    }
    case ArgKind::Number:
      if (!parse_number(t)) return std::nullopt;
      return std::string(t);
    case ArgKind::Choice:
      for (std::string_view choice : split_choices(arg.choices)) {
        if (lower(choice) == lower(t)) return std::string(t);
      }
      return std::nullopt;
    case ArgKind::Text:
      if (arg.name == "fp8_override_linear_precision") {
        // Three booleans, as accelerate's flag parses them.
        std::string out;
        int count = 0;
        std::size_t start = 0;
        while (start <= t.size()) {
          const std::size_t comma = std::min(t.find(',', start), t.size());
          const auto b = parse_boolean(t.substr(start, comma - start));
          if (!b) return std::nullopt;
          out += (count++ ? "," : "") + std::string(*b ? "true" : "false");
          start = comma + 1;
        }
        if (count != 3) return std::nullopt;
        return out;
      }
      if (t.empty()) return std::nullopt;
      return std::string(t);
  }
  return std::nullopt;
}

std::string allowed_values(const AccelerateArg& arg) {
  switch (arg.kind) {
    case ArgKind::Switch:
    case ArgKind::Bool:
      return "true or false";
    case ArgKind::Integer:
      return positive_count(arg.name) ? "a whole number >= 1" : "a whole number >= 0";
    case ArgKind::Number:
      return "a number";
    case ArgKind::Choice: {
      std::string out = "one of: ";
      bool first = true;
      for (std::string_view choice : split_choices(arg.choices)) {
        out += (first ? "" : ", ") + std::string(choice);
        first = false;
      }
      return out;
    }
    case ArgKind::Text:
      if (arg.name == "fp8_override_linear_precision")
        return "three booleans such as false,true,false";
      return "a non-empty text";
  }
  return "";
}

bool is_accelerate_config_key(std::string_view key) {
  return key == kFsdp || key == kDeepSpeed || key == kMegatron || key == kDynamo || key == kFp8 ||
         key == kParallelism || key == "dynamo_backend" || key == "enable_cpu_affinity" ||
         key == "num_cpu_threads_per_process";
}

void read_accelerate_key(const std::string& key, const YAML::Node& value, const YAML::Node& root,
                         const std::string& origin, AccelerateArgs& into,
                         std::vector<std::string>& problems, std::vector<std::string>& notices) {
  if (key == "dynamo_backend") {
    // accelerate's old files: a top-level dynamo_backend, NO meaning "no dynamo_config".
    read_value(*find_accelerate_arg("dynamo_backend"), key, value, origin, into, problems);
    return;
  }
  if (key == "enable_cpu_affinity" || key == "num_cpu_threads_per_process") {
    read_value(*find_accelerate_arg(key), key, value, origin, into, problems);
    return;
  }
  read_section(key, value, root, origin, into, problems, notices);
  // accelerate: a parallelism_config section with anything in it turns the feature on.
  if (key == kParallelism && value.IsMap() && value.size() > 0) {
    into["use_parallelism_config"] = "true";
  }
}

std::string format_accelerate_args(const AccelerateArgs& args) {
  // Bookkeeping entries (kDeepSpeedFields, kMixedPrecisionFlag) are no arguments.
  auto shown_arg = [&](const std::string& name) {
    if (name.starts_with("use_") && args.at(name) == "false") return false;  // the default
    return find_accelerate_arg(name) != nullptr || name.starts_with("fp8_");
  };
  std::size_t width = 0;
  for (const auto& [name, value] : args) {
    if (shown_arg(name)) width = std::max(width, name.size());
  }
  std::string out;
  for (const auto& [name, value] : args) {
    if (shown_arg(name)) out += fmt::format("{:<{}}  {}\n", name, width, value);
  }
  return out.empty() ? out : "\naccelerate launch arguments (docs/config.md):\n" + out;
}

std::vector<AccelerateFileKey> accelerate_file_keys(const AccelerateArgs& args) {
  std::vector<AccelerateFileKey> top;
  std::map<std::string, std::vector<AccelerateFileKey>> sections;
  for (const auto& [name, value] : args) {
    const AccelerateArg* arg = find_accelerate_arg(name);
    if (arg && !arg->section.empty()) {
      const bool text = arg->kind == ArgKind::Text || arg->kind == ArgKind::Choice;
      sections[std::string(arg->section)].push_back({std::string(arg->section), name, value, text});
    } else if (arg && (name == "enable_cpu_affinity" || name == "num_cpu_threads_per_process")) {
      top.push_back({"", name, value, false});
    } else if (!arg && name.starts_with("fp8_")) {  // exported whatever its name
      sections[std::string(kFp8)].push_back({std::string(kFp8), name, value, false});
    }
  }
  for (auto& [section, keys] : sections) top.insert(top.end(), keys.begin(), keys.end());
  return top;
}

std::optional<std::string> paradigm_switch(std::string_view distributed_type) {
  const std::string t = lower(trim(distributed_type));
  if (t == "fsdp") return "use_fsdp";
  if (t == "deepspeed") return "use_deepspeed";
  if (t == "megatron_lm") return "use_megatron_lm";
  return std::nullopt;
}

void select_paradigm(AccelerateArgs& args, const std::optional<std::string>& paradigm) {
  for (const char* name : {"use_fsdp", "use_deepspeed", "use_megatron_lm"}) {
    args[name] = paradigm == name ? "true" : "false";
  }
}

std::optional<std::string> selected_paradigm(const AccelerateArgs& args) {
  auto on = [&](const char* name) {
    const auto it = args.find(name);
    return it != args.end() && it->second == "true";
  };
  if (on("use_deepspeed")) return "DEEPSPEED";
  if (on("use_fsdp")) return "FSDP";
  if (on("use_megatron_lm")) return "MEGATRON_LM";
  return std::nullopt;
}

}  // namespace xlaunch::config
