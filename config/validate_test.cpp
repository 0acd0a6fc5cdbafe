#include "config/validate.hpp"

#include <catch2/catch.hpp>

#include "config/usage_error.hpp"
#include "config/yaml_io.hpp"

using namespace xlaunch::config;

namespace {

/// The message of the UsageError `text` raises, or "" when it loads.
std::string error_of(const std::string& text) {
  try {
    load_config_text(text, "f.yaml");
  } catch (const xlaunch::UsageError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("accelerate's tutorial file loads verbatim", "[validate]") {
  const auto loaded = load_config_text(R"(compute_environment: LOCAL_MACHINE
deepspeed_config: {}
distributed_type: MULTI_GPU
fsdp_config: {}
machine_rank: 0
main_process_ip: null
main_process_port: null
main_training_function: main
mixed_precision: fp16
num_machines: 1
num_processes: 2
use_cpu: false
)",
                                       "f.yaml");
  CHECK(loaded.settings.distributed_type == DistributedType::MultiGpu);
  CHECK(loaded.settings.mixed_precision == MixedPrecision::Fp16);
  CHECK(loaded.settings.num_processes == 2);
  CHECK(loaded.settings.num_machines == 1);
  CHECK(loaded.settings.machine_rank == 0);
  CHECK(loaded.settings.use_cpu == false);
  CHECK_FALSE(loaded.settings.main_process_ip);
  CHECK_FALSE(loaded.settings.main_process_port);
  CHECK(loaded.notices.empty());  // empty accelerate-only sections need no notice
}

TEST_CASE("non-empty accelerate-only keys are named in a notice", "[validate]") {
  const auto loaded = load_config_text(
      "deepspeed_config:\n  zero_stage: 2\ntpu_name: pod\ndowncast_bf16: 'no'\n"
      "enable_cpu_affinity: false\nmain_training_function: train\n",
      "f.yaml");
  REQUIRE(loaded.notices.size() == 2);  // deepspeed_config is read now (accelerate_keys)
  CHECK(loaded.settings.accelerate.at("zero_stage") == "2");
  CHECK(contains(loaded.notices[0], "f.yaml:3:1: ignoring tpu_name"));
  CHECK(contains(loaded.notices[1], "main_training_function"));
}

TEST_CASE("unknown keys are errors with a suggestion and location", "[validate]") {
  const std::string message =
      error_of("num_proceses: 2\nfoo_bar_baz_qux: 1\ndeepspeed_config: {}\n");
  CHECK(message ==
        "invalid config file f.yaml (2 problems):\n"
        "f.yaml:1:1: unknown key 'num_proceses' (did you mean 'num_processes'?)\n"
        "f.yaml:2:1: unknown key 'foo_bar_baz_qux'");
}

TEST_CASE("each kind of bad value names file, line, column, key, value and what is allowed",
          "[validate]") {
  CHECK(error_of("num_processes: two\n") ==
        "invalid config file f.yaml (1 problem):\n"
        "f.yaml:1:16: key 'num_processes': bad value 'two' (allowed: an integer >= 1)");
  CHECK(contains(error_of("a: 1\nmixed_precision: fp32\n"),
                 "f.yaml:2:18: key 'mixed_precision': bad value 'fp32' (allowed: no, fp16, bf16, "
                 "fp8)"));
  CHECK(contains(error_of("distributed_type: TPU\n"),
                 "f.yaml:1:19: key 'distributed_type': bad value 'TPU' (allowed: NO, MULTI_GPU "
                 "(or DDP), DP, MULTI_CPU, FSDP, DEEPSPEED, MEGATRON_LM)"));
  CHECK(contains(error_of("main_process_port: 99999\n"),
                 "f.yaml:1:20: key 'main_process_port': bad value '99999' (allowed: a port "
                 "number 0..65535"));
  CHECK(contains(error_of("use_cpu: sometimes\n"),
                 "key 'use_cpu': bad value 'sometimes' (allowed: true or false)"));
  CHECK(contains(error_of("num_machines: [1, 2]\n"),
                 "f.yaml:1:15: key 'num_machines': bad value '[1, 2]'"));
  CHECK(contains(error_of("gpu_ids: {a: 1}\n"), "key 'gpu_ids': bad value '{a: 1}'"));
  CHECK(contains(error_of("gpu_ids: 0;1\n"), "key 'gpu_ids': bad value '0;1' (allowed: all, or"));
  CHECK(contains(error_of("rdzv_backend: zookeeper\n"), "(allowed: static, c10d, etcd, etcd-v2)"));
  CHECK(contains(error_of("term_timeout: -3\n"), "(allowed: seconds >= 0 and <= 1000000)"));
  CHECK(contains(error_of("compute_environment: AMAZON_SAGEMAKER\n"), "(allowed: LOCAL_MACHINE)"));
}

TEST_CASE("checks across keys point at the key to change", "[validate]") {
  CHECK(contains(error_of("num_machines: 2\nmachine_rank: 2\n"),
                 "f.yaml:2:15: key 'machine_rank': bad value '2' (allowed: 0..1, below "
                 "num_machines 2)"));
  CHECK(contains(error_of("num_machines: 2\nnum_processes: 3\n"),
                 "f.yaml:2:16: key 'num_processes': bad value '3' (allowed: a multiple of "
                 "num_machines 2"));
}

TEST_CASE("all problems in a file are reported at once, in file order", "[validate]") {
  const std::string error =
      error_of("num_processes: 0\nmixed_precision: fp64\nnum_proceses: 3\nmain_process_port: x\n");
  CHECK(contains(error, "(4 problems)"));  // the misspelt key is one
  const auto first = error.find("f.yaml:1:16");
  const auto second = error.find("f.yaml:2:18");
  const auto third = error.find("f.yaml:4:20");
  REQUIRE(first != std::string::npos);
  REQUIRE(second != std::string::npos);
  REQUIRE(third != std::string::npos);
  CHECK(first < second);
  CHECK(second < third);
}

TEST_CASE("malformed YAML names the line and column", "[validate]") {
  const std::string error = error_of("num_processes: 2\nmixed_precision: [fp16\n");
  CHECK(contains(error, "f.yaml:"));
  CHECK(contains(error, "malformed YAML"));
  const std::string tab_error = error_of("a: 1\n b: 2\n");
  CHECK(contains(tab_error, "f.yaml:2:"));
}

TEST_CASE("the document must be a mapping", "[validate]") {
  CHECK(contains(error_of("- num_processes: 2\n"), "f.yaml:1:1: the file must map keys"));
  CHECK(contains(error_of("just text\n"), "must map keys"));
}

TEST_CASE("an empty file, null values and empty strings leave keys unset", "[validate]") {
  CHECK_FALSE(load_config_text("", "f.yaml").settings.num_processes);
  CHECK_FALSE(load_config_text("# only a comment\n", "f.yaml").settings.num_processes);
  const auto loaded = load_config_text("gpu_ids: ''\nlog_dir:\nmain_process_ip: ~\n", "f.yaml");
  CHECK_FALSE(loaded.settings.gpu_ids);
  CHECK_FALSE(loaded.settings.log_dir);
  CHECK_FALSE(loaded.settings.main_process_ip);
}

TEST_CASE("gpu_ids may be an int, a string or a list", "[validate]") {
  CHECK(load_config_text("gpu_ids: 0\n", "f").settings.gpu_ids == "0");
  CHECK(load_config_text("gpu_ids: \"0,1\"\n", "f").settings.gpu_ids == "0,1");
  CHECK(load_config_text("gpu_ids: 0,1\n", "f").settings.gpu_ids == "0,1");
  CHECK(load_config_text("gpu_ids: [2, 3]\n", "f").settings.gpu_ids == "2,3");
  CHECK(load_config_text("gpu_ids: all\n", "f").settings.gpu_ids == "all");
}

TEST_CASE("DDP is accepted on read; accelerate's old fp16 key is converted", "[validate]") {
  CHECK(load_config_text("distributed_type: DDP\n", "f").settings.distributed_type ==
        DistributedType::MultiGpu);
  const auto old = load_config_text("fp16: true\n", "f");
  CHECK(old.settings.mixed_precision == MixedPrecision::Fp16);
  CHECK(load_config_text("fp16: true\nmixed_precision: bf16\n", "f").settings.mixed_precision ==
        MixedPrecision::Bf16);
}

TEST_CASE("a repeated key warns and the last one wins", "[validate]") {
  const auto loaded = load_config_text("num_processes: 2\nnum_processes: 4\n", "f.yaml");
  CHECK(loaded.settings.num_processes == 4);
  REQUIRE(loaded.notices.size() == 1);
  CHECK(contains(loaded.notices[0], "f.yaml:2:1: key 'num_processes' appears again"));
}

TEST_CASE("to_yaml round-trips every key", "[validate]") {
  Settings s;
  s.compute_environment = "LOCAL_MACHINE";
  s.distributed_type = DistributedType::DataParallel;
  s.mixed_precision = MixedPrecision::Bf16;
  s.num_processes = 4;
  s.num_machines = 2;
  s.machine_rank = 1;
  s.main_process_ip = "10.0.0.1";
  s.main_process_port = 29500;
  s.gpu_ids = "0";
  s.rdzv_backend = "c10d";
  s.same_network = true;
  s.use_cpu = false;
  s.debug = true;
  s.log_dir = "true";  // a text that YAML would read as a bool must be quoted
  s.max_restarts = 3;
  s.term_timeout = 2.5;
  s.rdzv_timeout = 600;
  s.heartbeat_timeout = 30;
  s.tee = "3";
  s.local_ranks_filter = "0,2";
  s.python = "/usr/bin/python3";
  const std::string text = to_yaml(s);
  const auto back = load_config_text(text, "f");
  CHECK(to_yaml(back.settings) == text);
  CHECK(back.settings.log_dir == "true");
  CHECK(back.settings.gpu_ids == "0");
  CHECK(back.notices.empty());
  CHECK(text.find("distributed_type: DP") != std::string::npos);
  CHECK(to_yaml(Settings{}).find("{}") != std::string::npos);
}

TEST_CASE("a run id that is a path is refused at its line, shown on one line", "[validate]") {
  const std::string dots = error_of("num_processes: 2\nrdzv_id: a/../../victim\n");
  CHECK(contains(dots, "f.yaml:2:10: key 'rdzv_id': bad value 'a/../../victim'"));
  CHECK(contains(dots, "letters, digits"));
  // A "\0" escape is refused for any key, before the key's own check, where it is.
  const std::string nul = error_of("rdzv_id: \"a\\0b\\nc\"\n");
  CHECK(contains(nul, "f.yaml:1:10: a value holding a NUL character"));
  const std::string newline = error_of("rdzv_id: \"a\\nc\"\n");
  CHECK(contains(newline, "bad value 'a\\nc'"));
}

TEST_CASE("printable shows a huge value's start and length", "[validate]") {
  const std::string huge(10 << 20, 'v');
  CHECK(printable(huge) == std::string(200, 'v') + "... (10485760 bytes in all)");
  CHECK(printable(std::string(256, 'v')) == std::string(256, 'v'));
}

TEST_CASE("printable escapes control characters", "[validate]") {
  CHECK(printable("plain") == "plain");
  CHECK(printable(std::string("a\0b\n\t\x1b", 6)) == "a\\0b\\n\\t\\x1b");
}

TEST_CASE("an IPv6 address in brackets is taken without them; a stray bracket is refused",
          "[validate]") {
  // '[::1]' passed the check, then could not be resolved: "pick another port" was the hint.
  CHECK(load_config_text("main_process_ip: '[::1]'\n", "f.yaml").settings.main_process_ip == "::1");
  CHECK(load_config_text("main_process_ip: 'fe80::1'\n", "f.yaml").settings.main_process_ip ==
        "fe80::1");
  CHECK(contains(error_of("main_process_ip: '[host'\n"), "bad value '[host'"));
  CHECK(contains(error_of("main_process_ip: '[10.0.0.1]'\n"), "bad value '[10.0.0.1]'"));
}

TEST_CASE("numbers PyYAML would read otherwise are refused or written quoted", "[validate]") {
  // YAML 1.1 octal: 8 to accelerate, 10 to yaml-cpp.
  CHECK(contains(error_of("num_processes: 010\n"),
                 "f.yaml:1:16: key 'num_processes': bad value '010': accelerate reads a number "
                 "with a leading 0 as octal (YAML 1.1)"));
  CHECK(contains(error_of("main_process_port: -0029500\n"), "leading 0 as octal"));
  CHECK(load_config_text("num_processes: '010'\n", "f.yaml").settings.num_processes == 10);
  CHECK(error_of("num_processes: 10\nmain_process_port: 0\n").empty());
  // YAML 1.1 base 60: 1:4 would be 64 to accelerate.
  Settings elastic;
  elastic.num_machines = 1;
  elastic.min_machines = 1;
  elastic.max_machines = 4;
  const std::string text = to_yaml(elastic);
  CHECK(contains(text, "num_machines: '1:4'"));
  CHECK(load_config_text(text, "f.yaml").settings.max_machines == 4);
}

TEST_CASE("num_processes -1 in a file is accelerate's 'not given'", "[validate]") {
  const LoadedConfig loaded = load_config_text("num_processes: -1\n", "f.yaml");
  CHECK_FALSE(loaded.settings.num_processes);
  REQUIRE(loaded.notices.size() == 1);
  CHECK(contains(loaded.notices[0], "f.yaml:1:16: num_processes -1 is accelerate's 'not given'"));
  CHECK(contains(error_of("num_processes: -2\n"), "key 'num_processes': bad value '-2'"));
}
