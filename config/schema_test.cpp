#include "config/schema.hpp"

#include <catch2/catch.hpp>

using namespace xlaunch::config;

TEST_CASE("every Settings key the brief names is in the schema", "[schema]") {
  for (const char* name : {"compute_environment",
                           "distributed_type",
                           "mixed_precision",
                           "num_processes",
                           "num_machines",
                           "machine_rank",
                           "main_process_ip",
                           "main_process_port",
                           "gpu_ids",
                           "rdzv_backend",
                           "same_network",
                           "use_cpu",
                           "debug",
                           "log_dir",
                           "max_restarts",
                           "term_timeout",
                           "rdzv_timeout",
                           "heartbeat_timeout",
                           "tee",
                           "local_ranks_filter",
                           "python"}) {
    INFO(name);
    CHECK(find_key(name) != nullptr);
  }
  CHECK(find_key("deepspeed_config") == nullptr);
}

TEST_CASE("parse and print round-trip for every key", "[schema]") {
  Settings s;
  std::string notice;
  CHECK(find_key("distributed_type")->parse("DDP", s, notice));
  CHECK(find_key("distributed_type")->print(s) == "MULTI_GPU");
  CHECK(find_key("mixed_precision")->parse("BF16", s, notice));
  CHECK(find_key("mixed_precision")->print(s) == "bf16");
  CHECK(find_key("gpu_ids")->parse(" 0, 2 ", s, notice));
  CHECK(s.gpu_ids == "0,2");
  CHECK(find_key("term_timeout")->parse("30", s, notice));
  CHECK(find_key("term_timeout")->print(s) == "30");
  CHECK(find_key("term_timeout")->parse("2.5", s, notice));
  CHECK(find_key("term_timeout")->print(s) == "2.5");
  CHECK(find_key("use_cpu")->parse("yes", s, notice));
  CHECK(find_key("use_cpu")->print(s) == "true");
  CHECK(find_key("rdzv_backend")->parse("C10D", s, notice));
  CHECK(s.rdzv_backend == "c10d");
  CHECK(find_key("tee")->parse("0:3,1:2", s, notice));
  CHECK(find_key("tee")->parse("3", s, notice));
  CHECK(notice.empty());
}

TEST_CASE("values outside the allowed set are rejected and leave settings alone", "[schema]") {
  Settings s;
  std::string notice;
  CHECK_FALSE(find_key("num_processes")->parse("0", s, notice));
  CHECK_FALSE(find_key("num_processes")->parse("2.5", s, notice));
  CHECK_FALSE(find_key("num_processes")->parse("two", s, notice));
  CHECK_FALSE(find_key("main_process_port")->parse("70000", s, notice));
  CHECK_FALSE(find_key("machine_rank")->parse("-1", s, notice));
  CHECK_FALSE(find_key("mixed_precision")->parse("fp32", s, notice));
  CHECK_FALSE(find_key("distributed_type")->parse("TPU", s, notice));
  CHECK_FALSE(find_key("gpu_ids")->parse("0,,1", s, notice));
  CHECK_FALSE(find_key("gpu_ids")->parse("gpu0", s, notice));
  CHECK_FALSE(find_key("rdzv_backend")->parse("zookeeper", s, notice));
  CHECK_FALSE(find_key("rdzv_timeout")->parse("0", s, notice));
  CHECK_FALSE(find_key("term_timeout")->parse("-1", s, notice));
  CHECK_FALSE(find_key("tee")->parse("4", s, notice));
  CHECK_FALSE(find_key("tee")->parse("1,2", s, notice));
  CHECK_FALSE(find_key("debug")->parse("maybe", s, notice));
  CHECK_FALSE(find_key("main_process_ip")->parse("10.0.0.1 10.0.0.2", s, notice));
  CHECK_FALSE(find_key("compute_environment")->parse("AMAZON_SAGEMAKER", s, notice));
  CHECK_FALSE(s.num_processes);
  CHECK_FALSE(s.mixed_precision);
}

TEST_CASE("accelerate's DEEPSPEED and FSDP types launch as MULTI_GPU with their paradigm",
          "[schema]") {
  Settings s;
  std::string notice;
  REQUIRE(find_key("distributed_type")->parse("FSDP", s, notice));
  CHECK(s.distributed_type == DistributedType::MultiGpu);
  CHECK(s.accelerate.at("use_fsdp") == "true");
  CHECK(find_key("distributed_type")->print(s) == "FSDP");
  CHECK(notice.empty());
}

TEST_CASE("did you mean: close typos only", "[schema]") {
  CHECK(suggest_key("num_proceses") == "num_processes");
  CHECK(suggest_key("mixed_precison") == "mixed_precision");
  CHECK(suggest_key("Num_Processes") == "num_processes");
  CHECK(suggest_key("logdir") == "log_dir");
  CHECK_FALSE(suggest_key("completely_unrelated_thing"));
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(edit_distance("", "abc") == 3);
}

TEST_CASE("ignored accelerate keys", "[schema]") {
  CHECK(find_ignored_key("deepspeed_config") == nullptr);  // read by config/accelerate_keys
  CHECK(find_ignored_key("tpu_zone") != nullptr);
  CHECK(find_ignored_key("tpu_use_sudo") != nullptr);
  CHECK(find_ignored_key("main_training_function") != nullptr);
  CHECK(find_ignored_key("num_processes") == nullptr);
  CHECK(find_ignored_key("tpu_") == find_ignored_key("tpu_name"));
}

TEST_CASE("scalar parsers are strict", "[schema]") {
  CHECK(parse_integer(" 42 ") == 42);
  CHECK(parse_integer("+3") == 3);
  CHECK_FALSE(parse_integer("4x"));
  CHECK_FALSE(parse_integer(""));
  CHECK(parse_number("1e3") == 1000.0);
  CHECK(parse_boolean("ON") == true);
  CHECK(parse_boolean("0") == false);
  CHECK_FALSE(parse_boolean("2"));
  CHECK(normalize_gpu_ids("ALL") == "all");
  CHECK(env_var_name("num_processes") == "XLAUNCH_NUM_PROCESSES");
}

TEST_CASE("rdzv_id takes plain names only: it names folders", "[schema]") {
  std::string notice;
  auto accepts = [&](const std::string& text) {
    Settings s;
    return find_key("rdzv_id")->parse(text, s, notice) && s.rdzv_id == text;
  };
  CHECK(accepts("exp42"));
  CHECK(accepts("20261121-232345-2c2e42"));
  CHECK(accepts("Job.1_a-b"));
  CHECK(accepts(std::string(128, 'a')));
  CHECK_FALSE(accepts(std::string(129, 'a')));
  CHECK_FALSE(accepts(""));
  CHECK_FALSE(accepts(".."));
  CHECK_FALSE(accepts(".hidden"));
  CHECK_FALSE(accepts("-flag"));
  CHECK_FALSE(accepts("a/../../victim"));
  CHECK_FALSE(accepts("/abs"));
  CHECK_FALSE(accepts("a b"));
  CHECK_FALSE(accepts("a\nb"));
  CHECK_FALSE(accepts("a\n"));  // not trimmed: what is checked is what names the folder
  CHECK_FALSE(accepts(std::string("a\0b", 3)));
  CHECK_FALSE(accepts("caf\xc3\xa9"));
}

TEST_CASE("the run id rule is one pure function", "[schema]") {
  CHECK(is_valid_run_id("default"));
  CHECK(is_valid_run_id("0"));
  CHECK_FALSE(is_valid_run_id("a..b/c"));
  CHECK(is_valid_run_id("a..b"));  // dots inside a name are harmless; only '/' makes a path
  CHECK(kMaxRunIdLength == 128);
}

TEST_CASE("durations are bounded so that they cannot overflow a clock", "[schema]") {
  std::string notice;
  for (const char* key : {"term_timeout", "rdzv_timeout", "heartbeat_timeout"}) {
    INFO(key);
    Settings s;
    CHECK(find_key(key)->parse("1000000", s, notice));
    CHECK_FALSE(find_key(key)->parse("1000000.5", s, notice));
    CHECK_FALSE(find_key(key)->parse("9223372037", s, notice));
    CHECK_FALSE(find_key(key)->parse("1e300", s, notice));
    CHECK_FALSE(find_key(key)->parse("inf", s, notice));
    CHECK_FALSE(find_key(key)->parse("nan", s, notice));
  }
  Settings s;
  CHECK(find_key("term_timeout")->parse("0", s, notice));  // 0: SIGKILL right after SIGTERM
}
