// accelerate's config sections (fsdp_config, deepspeed_config, ...) and values, read from a
// config file into accelerate launch arguments (docs/config.md).
#include "config/accelerate_keys.hpp"

#include <catch2/catch.hpp>

#include "config/accelerate_env.hpp"
#include "config/usage_error.hpp"
#include "config/yaml_io.hpp"

using namespace xlaunch::config;

namespace {

Settings settings_of(const std::string& yaml) { return load_config_text(yaml, "f.yaml").settings; }

std::string error_of(const std::string& yaml) {
  try {
    load_config_text(yaml, "f.yaml");
  } catch (const xlaunch::UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("config sections become accelerate launch arguments", "[accelerate_env]") {
  const Settings s = settings_of(
      "distributed_type: FSDP\n"
      "fsdp_config:\n"
      "  sharding_strategy: HYBRID_SHARD\n"  // accelerate adds the fsdp_ prefix
      "  fsdp_offload_params: yes\n"
      "  fsdp_transformer_layer_cls_to_wrap: [BertLayer, T5Block]\n"
      "  fsdp_min_num_params: 1e8\n"
      "  fsdp_state_dict_type: null\n"
      "dynamo_config:\n  dynamo_backend: INDUCTOR\n  dynamo_use_fullgraph: true\n"
      "fp8_config:\n  backend: TE\n  amax_history_len: 16\n"
      "megatron_lm_config:\n  megatron_lm_tp_degree: 2\n"
      "enable_cpu_affinity: true\n"
      "num_cpu_threads_per_process: 3\n");
  const AccelerateArgs expected = {{"use_fsdp", "true"},
                                   {"use_deepspeed", "false"},
                                   {"use_megatron_lm", "false"},
                                   {"fsdp_sharding_strategy", "HYBRID_SHARD"},
                                   {"fsdp_offload_params", "true"},
                                   {"fsdp_transformer_layer_cls_to_wrap", "BertLayer,T5Block"},
                                   {"fsdp_min_num_params", "100000000"},
                                   {"dynamo_backend", "INDUCTOR"},
                                   {"dynamo_use_fullgraph", "true"},
                                   {"fp8_backend", "TE"},
                                   {"fp8_amax_history_len", "16"},
                                   {"megatron_lm_tp_degree", "2"},
                                   {"enable_cpu_affinity", "true"},
                                   {"num_cpu_threads_per_process", "3"}};
  CHECK(s.accelerate == expected);
  CHECK(s.distributed_type == DistributedType::MultiGpu);
}

TEST_CASE("deepspeed_config keys become ACCELERATE_CONFIG_DS_FIELDS", "[accelerate_env]") {
  const Settings s = settings_of(
      "distributed_type: DEEPSPEED\n"
      "deepspeed_config:\n"
      "  gradient_accumulation_steps: 2\n  zero3_init_flag: false\n  zero_stage: 2\n"
      "mixed_precision: bf16\n");
  CHECK(s.accelerate.at("use_deepspeed") == "true");
  CHECK(s.accelerate.at(std::string(kDeepSpeedFields)) ==
        "gradient_accumulation_steps,zero3_init_flag,zero_stage,mixed_precision");
  CHECK(s.accelerate.at("zero3_init_flag") == "false");
  // Without a file mixed_precision, accelerate does not list it.
  CHECK(settings_of("deepspeed_config: {zero_stage: 1}\n")
            .accelerate.at(std::string(kDeepSpeedFields)) == "zero_stage");
  CHECK_FALSE(
      settings_of("deepspeed_config: {}\n").accelerate.contains(std::string(kDeepSpeedFields)));
}

TEST_CASE("accelerate's old top-level dynamo_backend", "[accelerate_env]") {
  CHECK(settings_of("dynamo_backend: EAGER\n").accelerate.at("dynamo_backend") == "EAGER");
  CHECK(settings_of("dynamo_backend: 'NO'\n").accelerate.at("dynamo_backend") == "NO");
}

TEST_CASE("bad section values name file:line:col, the key and what is allowed",
          "[accelerate_env]") {
  CHECK_THAT(error_of("fsdp_config:\n  fsdp_version: 3\n"),
             Catch::Contains("f.yaml:2:17: key 'fsdp_config.fsdp_version': bad value '3' "
                             "(allowed: one of: 1, 2)"));
  CHECK_THAT(error_of("deepspeed_config:\n  zero_stage: two\n"),
             Catch::Contains("key 'deepspeed_config.zero_stage': bad value 'two'"));
  CHECK_THAT(error_of("fsdp_config: FULL_SHARD\n"),
             Catch::Contains("f.yaml:1:14: key 'fsdp_config': bad value 'FULL_SHARD' (allowed: "
                             "a mapping"));
  CHECK_THAT(error_of("dynamo_config:\n  dynamo_use_fullgraph: maybe\n"),
             Catch::Contains("(allowed: true or false)"));
  CHECK_THAT(error_of("num_cpu_threads_per_process: 0\n"),
             Catch::Contains("key 'num_cpu_threads_per_process': bad value '0' (allowed: a whole "
                             "number >= 1)"));
}

TEST_CASE("unknown section keys are a notice with a did-you-mean", "[accelerate_env]") {
  const LoadedConfig loaded =
      load_config_text("fsdp_config:\n  fsdp_sharding_stratgy: FULL_SHARD\n", "f.yaml");
  REQUIRE(loaded.notices.size() == 1);
  CHECK(loaded.notices[0] ==
        "f.yaml:2:3: key 'fsdp_config.fsdp_sharding_stratgy' is not one that accelerate launch "
        "exports; ignored (did you mean 'fsdp_sharding_strategy'?)");
  CHECK(loaded.settings.accelerate.empty());
}

TEST_CASE("section keys that are no names, or no variable names, are ignored with a notice",
          "[accelerate_env]") {
  const LoadedConfig loaded = load_config_text(
      "fsdp_config:\n  [a, b]: 1\nfp8_config:\n  x=y: 1\n  enable_fsdp_float8_all_gather: true\n",
      "f.yaml");
  REQUIRE(loaded.notices.size() == 2);
  CHECK(loaded.notices[0] ==
        "f.yaml:2:3: a key of 'fsdp_config' that is not a name (a list or a mapping); ignored");
  CHECK(loaded.notices[1] ==
        "f.yaml:4:3: key 'fp8_config.x=y' is no variable name (letters, digits and _ only); "
        "ignored");
  CHECK(loaded.settings.accelerate.size() == 1);
  CHECK(loaded.settings.accelerate.contains("fp8_enable_fsdp_float8_all_gather"));
}

TEST_CASE("a distributed_type from a higher source replaces the file's paradigm",
          "[accelerate_env]") {
  const Settings file = settings_of("distributed_type: FSDP\n");
  CHECK(selected_paradigm(file.accelerate) == "FSDP");
  const Settings env = settings_of("distributed_type: MULTI_GPU\n");  // e.g. XLAUNCH_*
  CHECK_FALSE(selected_paradigm(merge(file, env).accelerate));
  const Settings ds = settings_of("distributed_type: DEEPSPEED\n");
  CHECK(selected_paradigm(merge(file, ds).accelerate) == "DEEPSPEED");
  CHECK_NOTHROW(accelerate_launch(merge(file, ds), DistributedType::MultiGpu, 2));
}

TEST_CASE("flags override the file's arguments one by one", "[accelerate_env]") {
  Settings file = settings_of("fsdp_config:\n  fsdp_version: 1\n  fsdp_offload_params: true\n");
  Settings flags;
  flags.accelerate = {{"fsdp_version", "2"}};
  const Settings merged = merge(file, flags);
  CHECK(merged.accelerate.at("fsdp_version") == "2");
  CHECK(merged.accelerate.at("fsdp_offload_params") == "true");
}

TEST_CASE("values are checked and normalised as accelerate reads them", "[accelerate_env]") {
  const auto normal = [](const char* name, const char* text) {
    return normalize_accelerate_value(*find_accelerate_arg(name), text);
  };
  CHECK(normal("dynamo_use_dynamic", "On") == "true");
  CHECK(normal("fsdp_offload_params", "False") == "false");
  CHECK(normal("fsdp_min_num_params", "1e8") == "100000000");
  CHECK_FALSE(normal("fsdp_min_num_params", "1.5"));
  CHECK_FALSE(normal("fsdp_min_num_params", "1e300"));
  CHECK(normal("fsdp_min_num_params", "0") == "0");
  CHECK_FALSE(normal("num_cpu_threads_per_process", "0"));
  CHECK(allowed_values(*find_accelerate_arg("megatron_lm_tp_degree")) == "a whole number >= 1");
  CHECK(normal("dynamo_backend", "inductor") == "inductor");
  CHECK_FALSE(normal("dynamo_backend", "magic"));
  CHECK(normal("offload_optimizer_device", "CPU") == "CPU");
  CHECK(normal("fp8_override_linear_precision", "1,0,yes") == "true,false,true");
  CHECK_FALSE(normal("fp8_override_linear_precision", "true,false"));
  CHECK_FALSE(normal("deepspeed_config_file", " "));
  CHECK(allowed_values(*find_accelerate_arg("zero_stage")) == "one of: 0, 1, 2, 3");
}

TEST_CASE("config show lists the accelerate arguments", "[accelerate_env]") {
  CHECK(format_accelerate_args({}) == "");
  CHECK(format_accelerate_args({{"use_fsdp", "true"},
                                {"fsdp_version", "2"},
                                {std::string(kDeepSpeedFields), "zero_stage"}}) ==
        "\naccelerate launch arguments (docs/config.md):\n"
        "fsdp_version  2\n"
        "use_fsdp      true\n");
}
