#include "config/accelerate_env.hpp"

#include <fmt/core.h>

#include <cctype>

#include "config/text.hpp"
#include "config/usage_error.hpp"

namespace xlaunch::config {
namespace {

using Env = std::map<std::string, std::string>;

/// Python's str() of a boolean, which accelerate uses for some variables.
std::string python_bool(const std::string& canonical) {
  return canonical == "true" ? "True" : "False";
}

class Args {
 public:
  explicit Args(const AccelerateArgs& args) : args_(args) {}
  std::optional<std::string> get(const char* name) const {
    const auto it = args_.find(name);
    if (it == args_.end()) return std::nullopt;
    return it->second;
  }
  std::string get_or(const char* name, const char* fallback) const {
    return get(name).value_or(fallback);
  }
  bool on(const char* name) const { return get(name) == "true"; }
  const AccelerateArgs& all() const { return args_; }

 private:
  const AccelerateArgs& args_;
};

void dynamo(const Args& a, Env& env) {
  env["ACCELERATE_DYNAMO_BACKEND"] = upper(a.get_or("dynamo_backend", "no"));
  env["ACCELERATE_DYNAMO_MODE"] = a.get_or("dynamo_mode", "default");
  env["ACCELERATE_DYNAMO_USE_FULLGRAPH"] = python_bool(a.get_or("dynamo_use_fullgraph", "false"));
  env["ACCELERATE_DYNAMO_USE_DYNAMIC"] = python_bool(a.get_or("dynamo_use_dynamic", "false"));
  env["ACCELERATE_DYNAMO_USE_REGIONAL_COMPILATION"] =
      python_bool(a.get_or("dynamo_use_regional_compilation", "false"));
}

void fp8(const Args& a, Env& env) {
  if (auto backend = a.get("fp8_backend")) env["ACCELERATE_FP8_BACKEND"] = *backend;
  // fp8_config keys accelerate has no flag for pass through, as accelerate passes them.
  for (const auto& [name, value] : a.all()) {
    if (name.starts_with("fp8_") && !find_accelerate_arg(name)) {
      env["ACCELERATE_" + upper(name)] = value;
    }
  }
  env["ACCELERATE_FP8_USE_AUTOCAST_DURING_EVAL"] =
      python_bool(a.get_or("fp8_use_autocast_during_eval", "false"));
  env["ACCELERATE_FP8_MARGIN"] = a.get_or("fp8_margin", "0");
  env["ACCELERATE_FP8_INTERVAL"] = a.get_or("fp8_interval", "1");
  env["ACCELERATE_FP8_FORMAT"] = a.get_or("fp8_format", "E4M3");
  env["ACCELERATE_FP8_AMAX_HISTORY_LEN"] = a.get_or("fp8_amax_history_len", "1024");
  env["ACCELERATE_FP8_AMAX_COMPUTE_ALGO"] = a.get_or("fp8_amax_compute_algo", "most_recent");
  env["ACCELERATE_FP8_OPT_LEVEL"] = a.get_or("fp8_opt_level", "O2");
  // "a,b,c" (normalised to true/false) becomes three variables.
  const std::string o = a.get_or("fp8_override_linear_precision", "false,false,false");
  const std::size_t c1 = o.find(','), c2 = o.find(',', c1 + 1);
  env["ACCELERATE_FP8_OVERRIDE_FPROP"] = python_bool(o.substr(0, c1));
  env["ACCELERATE_FP8_OVERRIDE_DGRAD"] = python_bool(o.substr(c1 + 1, c2 - c1 - 1));
  env["ACCELERATE_FP8_OVERRIDE_WGRAD"] = python_bool(o.substr(c2 + 1));
}

void fsdp(const Args& a, Env& env) {
  env["ACCELERATE_USE_FSDP"] = "true";
  env["FSDP_VERSION"] = a.get_or("fsdp_version", "1");
  env["FSDP_SHARDING_STRATEGY"] = a.get_or("fsdp_sharding_strategy", "FULL_SHARD");
  env["FSDP_RESHARD_AFTER_FORWARD"] = lower(a.get_or("fsdp_reshard_after_forward", "true"));
  env["FSDP_OFFLOAD_PARAMS"] = a.get_or("fsdp_offload_params", "false");
  env["FSDP_MIN_NUM_PARAMS"] = a.get_or("fsdp_min_num_params", "100000000");
  if (auto v = a.get("fsdp_auto_wrap_policy")) env["FSDP_AUTO_WRAP_POLICY"] = *v;
  if (auto v = a.get("fsdp_transformer_layer_cls_to_wrap"))
    env["FSDP_TRANSFORMER_CLS_TO_WRAP"] = *v;
  if (auto v = a.get("fsdp_backward_prefetch")) env["FSDP_BACKWARD_PREFETCH"] = *v;
  if (auto v = a.get("fsdp_state_dict_type")) env["FSDP_STATE_DICT_TYPE"] = *v;
  env["FSDP_FORWARD_PREFETCH"] = a.get_or("fsdp_forward_prefetch", "false");
  env["FSDP_USE_ORIG_PARAMS"] = a.get_or("fsdp_use_orig_params", "true");
  env["FSDP_CPU_RAM_EFFICIENT_LOADING"] = a.get_or("fsdp_cpu_ram_efficient_loading", "true");
  env["FSDP_SYNC_MODULE_STATES"] = a.get_or("fsdp_sync_module_states", "true");
  env["FSDP_ACTIVATION_CHECKPOINTING"] = a.get_or("fsdp_activation_checkpointing", "false");
  if (auto v = a.get("fsdp_ignored_modules")) env["FSDP_IGNORED_MODULES"] = *v;
}

void megatron(const Args& a, Env& env) {
  env["ACCELERATE_USE_MEGATRON_LM"] = "true";
  env["MEGATRON_LM_TP_DEGREE"] = a.get_or("megatron_lm_tp_degree", "1");
  env["MEGATRON_LM_PP_DEGREE"] = a.get_or("megatron_lm_pp_degree", "1");
  env["MEGATRON_LM_GRADIENT_CLIPPING"] = a.get_or("megatron_lm_gradient_clipping", "1.0");
  if (auto v = a.get("megatron_lm_num_micro_batches")) env["MEGATRON_LM_NUM_MICRO_BATCHES"] = *v;
  if (auto v = a.get("megatron_lm_sequence_parallelism"))
    env["MEGATRON_LM_SEQUENCE_PARALLELISM"] = *v;
  if (auto v = a.get("megatron_lm_recompute_activations"))
    env["MEGATRON_LM_RECOMPUTE_ACTIVATIONS"] = *v;
  if (auto v = a.get("megatron_lm_use_distributed_optimizer"))
    env["MEGATRON_LM_USE_DISTRIBUTED_OPTIMIZER"] = *v;
}

void parallelism(const Args& a, Env& env) {
  env["ACCELERATE_USE_PARALLELISM_CONFIG"] = "true";
  const std::string prefix = "PARALLELISM_CONFIG_";
  env[prefix + "DP_REPLICATE_SIZE"] = a.get_or("parallelism_config_dp_replicate_size", "1");
  env[prefix + "TP_SIZE"] = a.get_or("parallelism_config_tp_size", "1");
  env[prefix + "CP_SIZE"] = a.get_or("parallelism_config_cp_size", "1");
  env[prefix + "DP_SHARD_SIZE"] = a.get_or("parallelism_config_dp_shard_size", "1");
  env[prefix + "CP_BACKEND"] = a.get_or("parallelism_config_cp_backend", "torch");
  env[prefix + "SP_SIZE"] = a.get_or("parallelism_config_sp_size", "1");
  env[prefix + "SP_BACKEND"] = a.get_or("parallelism_config_sp_backend", "deepspeed");
  if (env[prefix + "CP_SIZE"] != "1") {
    env[prefix + "CP_COMM_STRATEGY"] = a.get_or("parallelism_config_cp_comm_strategy", "allgather");
  }
  if (env[prefix + "SP_SIZE"] != "1") {
    // Python's str() of accelerate's values: None when unset, True/False.
    env[prefix + "SP_SEQ_LENGTH"] = a.get_or("parallelism_config_sp_seq_length", "None");
    env[prefix + "SP_SEQ_LENGTH_IS_VARIABLE"] =
        a.get_or("parallelism_config_sp_seq_length_is_variable", "true") == "true" ? "True"
                                                                                   : "False";
    env[prefix + "SP_ATTN_IMPLEMENTATION"] =
        a.get_or("parallelism_config_sp_attn_implementation", "sdpa");
  }
}

void deepspeed(const Args& a, Env& env) {
  std::string fields = lower(a.get_or(kDeepSpeedFields.data(), ""));
  if (a.on(kMixedPrecisionFlag.data()) && fields.ends_with("mixed_precision")) {
    fields.erase(fields.size() - std::string_view("mixed_precision").size());
    if (!fields.empty()) fields.pop_back();  // its comma
  }
  env["ACCELERATE_CONFIG_DS_FIELDS"] = fields;
  env["ACCELERATE_USE_DEEPSPEED"] = "true";
  if (auto v = a.get("zero_stage")) env["ACCELERATE_DEEPSPEED_ZERO_STAGE"] = *v;
  if (auto v = a.get("gradient_accumulation_steps"))
    env["ACCELERATE_GRADIENT_ACCUMULATION_STEPS"] = *v;
  if (auto v = a.get("gradient_clipping")) env["ACCELERATE_GRADIENT_CLIPPING"] = lower(*v);
  if (auto v = a.get("offload_optimizer_device"))
    env["ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE"] = lower(*v);
  if (auto v = a.get("offload_param_device"))
    env["ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE"] = lower(*v);
  if (auto v = a.get("zero3_init_flag")) env["ACCELERATE_DEEPSPEED_ZERO3_INIT"] = *v;
  if (auto v = a.get("zero3_save_16bit_model"))
    env["ACCELERATE_DEEPSPEED_ZERO3_SAVE_16BIT_MODEL"] = *v;
  if (auto v = a.get("deepspeed_config_file")) env["ACCELERATE_DEEPSPEED_CONFIG_FILE"] = *v;
  if (auto v = a.get("deepspeed_moe_layer_cls_names"))
    env["ACCELERATE_DEEPSPEED_MOE_LAYER_CLS_NAMES"] = *v;
}

}  // namespace

AccelerateLaunch accelerate_launch(const Settings& s, DistributedType type, int local_processes) {
  AccelerateLaunch out;
  out.local_processes = local_processes;
  out.args = s.accelerate;
  out.use_cpu = s.use_cpu.value_or(false);
  out.debug = s.debug.value_or(false);
  out.multi_gpu = type == DistributedType::MultiGpu;
  out.mixed_precision = s.mixed_precision.value_or(MixedPrecision::No);

  const Args a(out.args);
  const int paradigms = a.on("use_fsdp") + a.on("use_deepspeed") + a.on("use_megatron_lm");
  if (paradigms > 1) {
    throw UsageError(
        "more than one training paradigm was asked for (--use_fsdp, --use_deepspeed, "
        "--use_megatron_lm, or distributed_type FSDP/DEEPSPEED/MEGATRON_LM)",
        "accelerate runs one at a time: keep one of them");
  }
  if (a.on("use_fsdp") && a.get_or("fsdp_cpu_ram_efficient_loading", "true") == "true" &&
      a.get_or("fsdp_sync_module_states", "true") == "false") {
    throw UsageError(
        "fsdp_cpu_ram_efficient_loading is true but fsdp_sync_module_states is false: ranks "
        "other than 0 would keep empty weights",
        "set fsdp_sync_module_states: true (or --fsdp_sync_module_states true), or "
        "fsdp_cpu_ram_efficient_loading: false");
  }
  return out;
}

std::map<std::string, std::string> accelerate_environment(const AccelerateLaunch& launch) {
  const Args a(launch.args);
  Env env;
  if (launch.debug) env["ACCELERATE_DEBUG_MODE"] = "true";
  if (launch.mixed_precision == MixedPrecision::Fp8) fp8(a, env);
  if (a.on("enable_cpu_affinity")) env["ACCELERATE_CPU_AFFINITY"] = "1";

  // accelerate picks one of three launchers; each exports a different set.
  const bool cpu = launch.use_cpu;
  if (!cpu && a.on("use_deepspeed")) {
    deepspeed(a, env);  // DeepSpeed's launcher sets no dynamo or thread variables
    if (a.on("use_parallelism_config")) parallelism(a, env);
    return env;
  }
  dynamo(a, env);
  if (auto threads = a.get("num_cpu_threads_per_process")) env["OMP_NUM_THREADS"] = *threads;
  if (!cpu && (a.on("use_fsdp") || a.on("use_megatron_lm") || launch.multi_gpu)) {
    if (a.on("use_fsdp")) fsdp(a, env);
    if (a.on("use_megatron_lm")) megatron(a, env);
    if (a.on("use_parallelism_config")) parallelism(a, env);
    return env;
  }
  // The simple launcher (one process, or CPU workers).
  env["ACCELERATE_USE_CPU"] = cpu ? "True" : "False";
  // accelerate tests the text "False" for truth, so it sets these for every simple launch,
  // which runs one process. Several workers with compact affinity would each pin their
  // threads to the same first cores (Intel OpenMP), so they get them only when alone.
  if (launch.local_processes == 1) {
    env["KMP_AFFINITY"] = "granularity=fine,compact,1,0";
    env["KMP_BLOCKTIME"] = "1";
  }
  if (cpu) env["CUDA_VISIBLE_DEVICES"] = "";  // xlaunch's: a CPU job's workers see no GPU
  return env;
}

std::optional<std::string> accelerate_default_config_path(const Getenv& getenv) {
  std::string home_dir;
  if (auto home = getenv("HOME"); home && !home->empty()) home_dir = *home;
  auto expand = [&](const std::string& path) -> std::optional<std::string> {
    if (path == "~" || path.starts_with("~/")) {
      if (home_dir.empty()) return std::nullopt;
      return home_dir + path.substr(1);
    }
    return path;
  };
  std::optional<std::string> base;
  if (auto hf = getenv("HF_HOME"); hf && !hf->empty()) {
    base = expand(*hf);
  } else {
    auto cache = getenv("XDG_CACHE_HOME");
    base = expand((cache && !cache->empty() ? *cache : std::string("~/.cache")) + "/huggingface");
  }
  if (!base) return std::nullopt;
  while (base->size() > 1 && base->back() == '/') base->pop_back();
  return *base + "/accelerate/default_config.yaml";
}

}  // namespace xlaunch::config
