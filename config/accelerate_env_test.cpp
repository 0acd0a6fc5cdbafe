// accelerate's environment contract, row by row (docs/config.md, "accelerate's environment
// contract"); accelerate_keys_test.cpp has the config sections and values that feed it.
#include "config/accelerate_env.hpp"

#include <catch2/catch.hpp>

#include "config/usage_error.hpp"
#include "config/yaml_io.hpp"

using namespace xlaunch::config;
using Env = std::map<std::string, std::string>;

namespace {

AccelerateLaunch launch_with(AccelerateArgs args, bool multi_gpu = true) {
  AccelerateLaunch l;
  l.args = std::move(args);
  l.multi_gpu = multi_gpu;
  return l;
}

Env env_of(const AccelerateLaunch& l) { return accelerate_environment(l); }

std::optional<std::string> get(const Env& env, const std::string& name) {
  const auto it = env.find(name);
  if (it == env.end()) return std::nullopt;
  return it->second;
}

Getenv fake_env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

}  // namespace

TEST_CASE("ACCELERATE_DEBUG_MODE: debug / --debug", "[accelerate_env]") {
  AccelerateLaunch l = launch_with({});
  CHECK_FALSE(get(env_of(l), "ACCELERATE_DEBUG_MODE"));
  l.debug = true;
  CHECK(get(env_of(l), "ACCELERATE_DEBUG_MODE") == "true");
}

TEST_CASE("ACCELERATE_DYNAMO_*: defaults, then dynamo_config / --dynamo_*", "[accelerate_env]") {
  const Env plain = env_of(launch_with({}));
  CHECK(get(plain, "ACCELERATE_DYNAMO_BACKEND") == "NO");
  CHECK(get(plain, "ACCELERATE_DYNAMO_MODE") == "default");
  CHECK(get(plain, "ACCELERATE_DYNAMO_USE_FULLGRAPH") == "False");
  CHECK(get(plain, "ACCELERATE_DYNAMO_USE_DYNAMIC") == "False");
  CHECK(get(plain, "ACCELERATE_DYNAMO_USE_REGIONAL_COMPILATION") == "False");

  const Env set = env_of(launch_with({{"dynamo_backend", "inductor"},
                                      {"dynamo_mode", "max-autotune"},
                                      {"dynamo_use_fullgraph", "true"},
                                      {"dynamo_use_dynamic", "true"},
                                      {"dynamo_use_regional_compilation", "true"}}));
  CHECK(get(set, "ACCELERATE_DYNAMO_BACKEND") == "INDUCTOR");
  CHECK(get(set, "ACCELERATE_DYNAMO_MODE") == "max-autotune");
  CHECK(get(set, "ACCELERATE_DYNAMO_USE_FULLGRAPH") == "True");
  CHECK(get(set, "ACCELERATE_DYNAMO_USE_DYNAMIC") == "True");
  CHECK(get(set, "ACCELERATE_DYNAMO_USE_REGIONAL_COMPILATION") == "True");
}

TEST_CASE("ACCELERATE_USE_FSDP and FSDP_*: accelerate's defaults", "[accelerate_env]") {
  const Env env = env_of(launch_with({{"use_fsdp", "true"}}));
  const Env expected = {{"ACCELERATE_USE_FSDP", "true"},
                        {"FSDP_VERSION", "1"},
                        {"FSDP_SHARDING_STRATEGY", "FULL_SHARD"},
                        {"FSDP_RESHARD_AFTER_FORWARD", "true"},
                        {"FSDP_OFFLOAD_PARAMS", "false"},
                        {"FSDP_MIN_NUM_PARAMS", "100000000"},
                        {"FSDP_FORWARD_PREFETCH", "false"},
                        {"FSDP_USE_ORIG_PARAMS", "true"},
                        {"FSDP_CPU_RAM_EFFICIENT_LOADING", "true"},
                        {"FSDP_SYNC_MODULE_STATES", "true"},
                        {"FSDP_ACTIVATION_CHECKPOINTING", "false"}};
  for (const auto& [name, value] : expected) {
    INFO(name);
    CHECK(get(env, name) == value);
  }
  // Exported only when given.
  for (const char* name :
       {"FSDP_AUTO_WRAP_POLICY", "FSDP_TRANSFORMER_CLS_TO_WRAP", "FSDP_BACKWARD_PREFETCH",
        "FSDP_STATE_DICT_TYPE", "FSDP_IGNORED_MODULES"}) {
    INFO(name);
    CHECK_FALSE(get(env, name));
  }
  CHECK_FALSE(get(env_of(launch_with({})), "ACCELERATE_USE_FSDP"));
}

TEST_CASE("FSDP_*: every fsdp_config key", "[accelerate_env]") {
  const Env env = env_of(launch_with({{"use_fsdp", "true"},
                                      {"fsdp_version", "2"},
                                      {"fsdp_sharding_strategy", "SHARD_GRAD_OP"},
                                      {"fsdp_reshard_after_forward", "FALSE"},
                                      {"fsdp_offload_params", "true"},
                                      {"fsdp_min_num_params", "2000"},
                                      {"fsdp_auto_wrap_policy", "TRANSFORMER_BASED_WRAP"},
                                      {"fsdp_transformer_layer_cls_to_wrap", "BertLayer,T5Block"},
                                      {"fsdp_backward_prefetch", "BACKWARD_POST"},
                                      {"fsdp_state_dict_type", "SHARDED_STATE_DICT"},
                                      {"fsdp_forward_prefetch", "true"},
                                      {"fsdp_use_orig_params", "false"},
                                      {"fsdp_cpu_ram_efficient_loading", "false"},
                                      {"fsdp_sync_module_states", "false"},
                                      {"fsdp_activation_checkpointing", "true"},
                                      {"fsdp_ignored_modules", "head"}}));
  const Env expected = {{"FSDP_VERSION", "2"},
                        {"FSDP_SHARDING_STRATEGY", "SHARD_GRAD_OP"},
                        {"FSDP_RESHARD_AFTER_FORWARD", "false"},
                        {"FSDP_OFFLOAD_PARAMS", "true"},
                        {"FSDP_MIN_NUM_PARAMS", "2000"},
                        {"FSDP_AUTO_WRAP_POLICY", "TRANSFORMER_BASED_WRAP"},
                        {"FSDP_TRANSFORMER_CLS_TO_WRAP", "BertLayer,T5Block"},
                        {"FSDP_BACKWARD_PREFETCH", "BACKWARD_POST"},
                        {"FSDP_STATE_DICT_TYPE", "SHARDED_STATE_DICT"},
                        {"FSDP_FORWARD_PREFETCH", "true"},
                        {"FSDP_USE_ORIG_PARAMS", "false"},
                        {"FSDP_CPU_RAM_EFFICIENT_LOADING", "false"},
                        {"FSDP_SYNC_MODULE_STATES", "false"},
                        {"FSDP_ACTIVATION_CHECKPOINTING", "true"},
                        {"FSDP_IGNORED_MODULES", "head"}};
  for (const auto& [name, value] : expected) {
    INFO(name);
    CHECK(get(env, name) == value);
  }
}

TEST_CASE("ACCELERATE_USE_DEEPSPEED and ACCELERATE_DEEPSPEED_*", "[accelerate_env]") {
  const Env env =
      env_of(launch_with({{"use_deepspeed", "true"},
                          {std::string(kDeepSpeedFields), "Zero_Stage,gradient_clipping"},
                          {"zero_stage", "3"},
                          {"gradient_accumulation_steps", "4"},
                          {"gradient_clipping", "1.0"},
                          {"offload_optimizer_device", "CPU"},
                          {"offload_param_device", "NVMe"},
                          {"zero3_init_flag", "true"},
                          {"zero3_save_16bit_model", "false"},
                          {"deepspeed_config_file", "ds.json"},
                          {"deepspeed_moe_layer_cls_names", "MixtralSparseMoeBlock"},
                          {"num_cpu_threads_per_process", "4"},
                          {"enable_cpu_affinity", "true"}}));
  const Env expected = {{"ACCELERATE_USE_DEEPSPEED", "true"},
                        {"ACCELERATE_CONFIG_DS_FIELDS", "zero_stage,gradient_clipping"},
                        {"ACCELERATE_DEEPSPEED_ZERO_STAGE", "3"},
                        {"ACCELERATE_GRADIENT_ACCUMULATION_STEPS", "4"},
                        {"ACCELERATE_GRADIENT_CLIPPING", "1.0"},
                        {"ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE", "cpu"},
                        {"ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE", "nvme"},
                        {"ACCELERATE_DEEPSPEED_ZERO3_INIT", "true"},
                        {"ACCELERATE_DEEPSPEED_ZERO3_SAVE_16BIT_MODEL", "false"},
                        {"ACCELERATE_DEEPSPEED_CONFIG_FILE", "ds.json"},
                        {"ACCELERATE_DEEPSPEED_MOE_LAYER_CLS_NAMES", "MixtralSparseMoeBlock"},
                        {"ACCELERATE_CPU_AFFINITY", "1"}};
  for (const auto& [name, value] : expected) {
    INFO(name);
    CHECK(get(env, name) == value);
  }
  // accelerate's DeepSpeed launcher sets no dynamo and no thread count.
  CHECK_FALSE(get(env, "ACCELERATE_DYNAMO_BACKEND"));
  CHECK_FALSE(get(env, "OMP_NUM_THREADS"));

  // A --mixed_precision flag takes mixed_precision out of the file's fields.
  const Env flagged =
      env_of(launch_with({{"use_deepspeed", "true"},
                          {std::string(kDeepSpeedFields), "zero_stage,mixed_precision"},
                          {std::string(kMixedPrecisionFlag), "true"}}));
  CHECK(get(flagged, "ACCELERATE_CONFIG_DS_FIELDS") == "zero_stage");

  const Env bare = env_of(launch_with({{"use_deepspeed", "true"}}));
  CHECK(get(bare, "ACCELERATE_CONFIG_DS_FIELDS") == "");
  CHECK_FALSE(get(bare, "ACCELERATE_DEEPSPEED_ZERO_STAGE"));
  CHECK_FALSE(get(bare, "ACCELERATE_GRADIENT_ACCUMULATION_STEPS"));
  CHECK_FALSE(get(bare, "ACCELERATE_GRADIENT_CLIPPING"));
}

TEST_CASE("ACCELERATE_USE_MEGATRON_LM and MEGATRON_LM_*", "[accelerate_env]") {
  const Env defaults = env_of(launch_with({{"use_megatron_lm", "true"}}));
  CHECK(get(defaults, "ACCELERATE_USE_MEGATRON_LM") == "true");
  CHECK(get(defaults, "MEGATRON_LM_TP_DEGREE") == "1");
  CHECK(get(defaults, "MEGATRON_LM_PP_DEGREE") == "1");
  CHECK(get(defaults, "MEGATRON_LM_GRADIENT_CLIPPING") == "1.0");
  CHECK_FALSE(get(defaults, "MEGATRON_LM_NUM_MICRO_BATCHES"));

  const Env set = env_of(launch_with({{"use_megatron_lm", "true"},
                                      {"megatron_lm_tp_degree", "2"},
                                      {"megatron_lm_pp_degree", "4"},
                                      {"megatron_lm_num_micro_batches", "8"},
                                      {"megatron_lm_sequence_parallelism", "true"},
                                      {"megatron_lm_recompute_activations", "false"},
                                      {"megatron_lm_use_distributed_optimizer", "true"},
                                      {"megatron_lm_gradient_clipping", "0.5"}}));
  CHECK(get(set, "MEGATRON_LM_TP_DEGREE") == "2");
  CHECK(get(set, "MEGATRON_LM_PP_DEGREE") == "4");
  CHECK(get(set, "MEGATRON_LM_NUM_MICRO_BATCHES") == "8");
  CHECK(get(set, "MEGATRON_LM_SEQUENCE_PARALLELISM") == "true");
  CHECK(get(set, "MEGATRON_LM_RECOMPUTE_ACTIVATIONS") == "false");
  CHECK(get(set, "MEGATRON_LM_USE_DISTRIBUTED_OPTIMIZER") == "true");
  CHECK(get(set, "MEGATRON_LM_GRADIENT_CLIPPING") == "0.5");
}

TEST_CASE("OMP_NUM_THREADS: num_cpu_threads_per_process", "[accelerate_env]") {
  CHECK_FALSE(get(env_of(launch_with({})), "OMP_NUM_THREADS"));  // the launcher's default
  CHECK(get(env_of(launch_with({{"num_cpu_threads_per_process", "6"}})), "OMP_NUM_THREADS") == "6");
  CHECK(get(env_of(launch_with({{"num_cpu_threads_per_process", "2"}}, false)),
            "OMP_NUM_THREADS") == "2");
}

TEST_CASE("ACCELERATE_CPU_AFFINITY: enable_cpu_affinity", "[accelerate_env]") {
  CHECK_FALSE(
      get(env_of(launch_with({{"enable_cpu_affinity", "false"}})), "ACCELERATE_CPU_AFFINITY"));
  CHECK(get(env_of(launch_with({{"enable_cpu_affinity", "true"}})), "ACCELERATE_CPU_AFFINITY") ==
        "1");
}

TEST_CASE("ACCELERATE_FP8_*: only with mixed_precision fp8", "[accelerate_env]") {
  AccelerateLaunch l = launch_with({{"fp8_backend", "te"}});
  CHECK_FALSE(get(env_of(l), "ACCELERATE_FP8_BACKEND"));
  l.mixed_precision = MixedPrecision::Fp8;
  const Env defaults = env_of(l);
  const Env expected = {{"ACCELERATE_FP8_BACKEND", "te"},
                        {"ACCELERATE_FP8_USE_AUTOCAST_DURING_EVAL", "False"},
                        {"ACCELERATE_FP8_MARGIN", "0"},
                        {"ACCELERATE_FP8_INTERVAL", "1"},
                        {"ACCELERATE_FP8_FORMAT", "E4M3"},
                        {"ACCELERATE_FP8_AMAX_HISTORY_LEN", "1024"},
                        {"ACCELERATE_FP8_AMAX_COMPUTE_ALGO", "most_recent"},
                        {"ACCELERATE_FP8_OPT_LEVEL", "O2"},
                        {"ACCELERATE_FP8_OVERRIDE_FPROP", "False"},
                        {"ACCELERATE_FP8_OVERRIDE_DGRAD", "False"},
                        {"ACCELERATE_FP8_OVERRIDE_WGRAD", "False"}};
  for (const auto& [name, value] : expected) {
    INFO(name);
    CHECK(get(defaults, name) == value);
  }
  l.args = {{"fp8_format", "HYBRID"},
            {"fp8_margin", "2"},
            {"fp8_use_autocast_during_eval", "true"},
            {"fp8_override_linear_precision", "true,false,true"}};
  const Env set = env_of(l);
  CHECK_FALSE(get(set, "ACCELERATE_FP8_BACKEND"));
  CHECK(get(set, "ACCELERATE_FP8_FORMAT") == "HYBRID");
  CHECK(get(set, "ACCELERATE_FP8_MARGIN") == "2");
  CHECK(get(set, "ACCELERATE_FP8_USE_AUTOCAST_DURING_EVAL") == "True");
  CHECK(get(set, "ACCELERATE_FP8_OVERRIDE_FPROP") == "True");
  CHECK(get(set, "ACCELERATE_FP8_OVERRIDE_DGRAD") == "False");
  CHECK(get(set, "ACCELERATE_FP8_OVERRIDE_WGRAD") == "True");

  // fp8_config keys without a flag of their own pass through, as accelerate passes them.
  const Settings file = load_config_text(
                            "mixed_precision: fp8\nfp8_config:\n  backend: AO\n  "
                            "enable_fsdp_float8_all_gather: true\n"
                            "  pad_inner_dim: 16\n",
                            "f.yaml")
                            .settings;
  const Env passed = env_of(accelerate_launch(file, DistributedType::MultiGpu, 2));
  CHECK(get(passed, "ACCELERATE_FP8_BACKEND") == "AO");
  CHECK(get(passed, "ACCELERATE_FP8_ENABLE_FSDP_FLOAT8_ALL_GATHER") == "True");
  CHECK(get(passed, "ACCELERATE_FP8_PAD_INNER_DIM") == "16");
}

TEST_CASE("use_cpu / --cpu: ACCELERATE_USE_CPU=True, no GPU, no paradigm", "[accelerate_env]") {
  AccelerateLaunch l = launch_with({{"use_fsdp", "true"}, {"use_deepspeed", "false"}});
  l.use_cpu = true;
  const Env env = env_of(l);
  CHECK(get(env, "ACCELERATE_USE_CPU") == "True");
  CHECK(get(env, "CUDA_VISIBLE_DEVICES") == "");
  // accelerate runs --cpu with its simple launcher, whatever the paradigm.
  CHECK_FALSE(get(env, "ACCELERATE_USE_FSDP"));
  CHECK(get(env, "KMP_AFFINITY") == "granularity=fine,compact,1,0");
  CHECK(get(env, "KMP_BLOCKTIME") == "1");
  // Several CPU workers: no compact pinning, which would stack them on the same cores.
  l.local_processes = 2;
  const Env several = env_of(l);
  CHECK(get(several, "ACCELERATE_USE_CPU") == "True");
  CHECK_FALSE(get(several, "KMP_AFFINITY"));
  CHECK_FALSE(get(several, "KMP_BLOCKTIME"));
}

TEST_CASE("the simple launcher (one GPU process) and the multi-GPU one", "[accelerate_env]") {
  const Env simple = env_of(launch_with({}, false));
  CHECK(get(simple, "ACCELERATE_USE_CPU") == "False");
  CHECK(get(simple, "KMP_BLOCKTIME") == "1");
  CHECK_FALSE(get(simple, "CUDA_VISIBLE_DEVICES"));  // the launcher's GPU choice stands
  const Env multi = env_of(launch_with({}, true));
  CHECK_FALSE(get(multi, "ACCELERATE_USE_CPU"));
  CHECK_FALSE(get(multi, "KMP_AFFINITY"));
  CHECK(get(multi, "ACCELERATE_DYNAMO_BACKEND") == "NO");
}

TEST_CASE("contradictions accelerate refuses are exit-2 errors", "[accelerate_env]") {
  Settings s;
  s.accelerate = {{"use_fsdp", "true"}, {"use_deepspeed", "true"}};
  CHECK_THROWS_WITH(accelerate_launch(s, DistributedType::MultiGpu, 2),
                    Catch::Contains("more than one training paradigm"));
  s.accelerate = {{"use_fsdp", "true"}, {"fsdp_sync_module_states", "false"}};
  CHECK_THROWS_WITH(accelerate_launch(s, DistributedType::MultiGpu, 2),
                    Catch::Contains("fsdp_sync_module_states is false"));
  s.accelerate["fsdp_cpu_ram_efficient_loading"] = "false";
  CHECK_NOTHROW(accelerate_launch(s, DistributedType::MultiGpu, 2));
}

TEST_CASE("accelerate_launch takes use_cpu, debug, precision and the job type",
          "[accelerate_env]") {
  Settings s;
  s.use_cpu = true;
  s.debug = true;
  s.mixed_precision = MixedPrecision::Fp8;
  s.accelerate = {{"zero_stage", "2"}};
  const AccelerateLaunch l = accelerate_launch(s, DistributedType::MultiGpu, 2);
  CHECK(l.use_cpu);
  CHECK(l.debug);
  CHECK(l.multi_gpu);
  CHECK(l.mixed_precision == MixedPrecision::Fp8);
  CHECK(l.local_processes == 2);
  CHECK(l.args.at("zero_stage") == "2");
  CHECK_FALSE(accelerate_launch(s, DistributedType::MultiCpu, 2).multi_gpu);
}

TEST_CASE("accelerate's default config path", "[accelerate_env]") {
  CHECK(accelerate_default_config_path(fake_env({{"HF_HOME", "/hf/"}, {"HOME", "/h"}})) ==
        "/hf/accelerate/default_config.yaml");
  CHECK(accelerate_default_config_path(fake_env({{"HF_HOME", "~/hf"}, {"HOME", "/h"}})) ==
        "/h/hf/accelerate/default_config.yaml");
  CHECK(accelerate_default_config_path(fake_env({{"XDG_CACHE_HOME", "/c"}, {"HOME", "/h"}})) ==
        "/c/huggingface/accelerate/default_config.yaml");
  CHECK(accelerate_default_config_path(fake_env({{"HOME", "/h"}})) ==
        "/h/.cache/huggingface/accelerate/default_config.yaml");
  CHECK_FALSE(accelerate_default_config_path(fake_env({})));
}

TEST_CASE("ACCELERATE_USE_PARALLELISM_CONFIG and PARALLELISM_CONFIG_*", "[accelerate_env]") {
  CHECK_FALSE(
      get(env_of(launch_with({{"use_fsdp", "true"}})), "ACCELERATE_USE_PARALLELISM_CONFIG"));
  const Env defaults =
      env_of(launch_with({{"use_fsdp", "true"}, {"use_parallelism_config", "true"}}));
  CHECK(get(defaults, "ACCELERATE_USE_PARALLELISM_CONFIG") == "true");
  for (const char* name : {"DP_REPLICATE_SIZE", "DP_SHARD_SIZE", "TP_SIZE", "CP_SIZE", "SP_SIZE"}) {
    CHECK(get(defaults, std::string("PARALLELISM_CONFIG_") + name) == "1");
  }
  CHECK(get(defaults, "PARALLELISM_CONFIG_CP_BACKEND") == "torch");
  CHECK(get(defaults, "PARALLELISM_CONFIG_SP_BACKEND") == "deepspeed");
  CHECK_FALSE(get(defaults, "PARALLELISM_CONFIG_CP_COMM_STRATEGY"));  // only with CP > 1
  CHECK_FALSE(get(defaults, "PARALLELISM_CONFIG_SP_SEQ_LENGTH"));     // only with SP > 1

  const Env cp = env_of(launch_with({{"use_parallelism_config", "true"},
                                     {"parallelism_config_cp_size", "2"},
                                     {"parallelism_config_dp_shard_size", "2"}}));
  CHECK(get(cp, "PARALLELISM_CONFIG_CP_SIZE") == "2");
  CHECK(get(cp, "PARALLELISM_CONFIG_DP_SHARD_SIZE") == "2");
  CHECK(get(cp, "PARALLELISM_CONFIG_CP_COMM_STRATEGY") == "allgather");

  const Env sp = env_of(launch_with({{"use_deepspeed", "true"},
                                     {"use_parallelism_config", "true"},
                                     {"parallelism_config_sp_size", "4"},
                                     {"parallelism_config_sp_seq_length_is_variable", "false"}}));
  CHECK(get(sp, "ACCELERATE_USE_DEEPSPEED") == "true");  // DeepSpeed's launcher sets it too
  CHECK(get(sp, "PARALLELISM_CONFIG_SP_SIZE") == "4");
  CHECK(get(sp, "PARALLELISM_CONFIG_SP_SEQ_LENGTH") == "None");
  CHECK(get(sp, "PARALLELISM_CONFIG_SP_SEQ_LENGTH_IS_VARIABLE") == "False");
  CHECK(get(sp, "PARALLELISM_CONFIG_SP_ATTN_IMPLEMENTATION") == "sdpa");

  // The simple launcher (one CPU process) sets none of it, as accelerate's.
  AccelerateLaunch simple = launch_with({{"use_parallelism_config", "true"}}, false);
  simple.use_cpu = true;
  CHECK_FALSE(get(env_of(simple), "ACCELERATE_USE_PARALLELISM_CONFIG"));
}

TEST_CASE("a parallelism_config section turns it on; its keys keep their prefix",
          "[accelerate_env]") {
  const LoadedConfig loaded = load_config_text(
      "distributed_type: FSDP\nfsdp_config:\n  fsdp_version: 2\nnum_processes: 4\n"
      "parallelism_config:\n  parallelism_config_dp_shard_size: 2\n"
      "  parallelism_config_cp_size: 2\n",
      "nd.yaml");
  CHECK(loaded.settings.accelerate.at("use_parallelism_config") == "true");
  CHECK(loaded.settings.accelerate.at("parallelism_config_cp_size") == "2");
  CHECK(loaded.notices.empty());
  CHECK_FALSE(load_config_text("distributed_type: FSDP\nparallelism_config: {}\n", "e.yaml")
                  .settings.accelerate.contains("use_parallelism_config"));
  CHECK_THROWS_AS(
      load_config_text("parallelism_config:\n  parallelism_config_tp_size: 0\n", "z.yaml"),
      xlaunch::UsageError);
}
