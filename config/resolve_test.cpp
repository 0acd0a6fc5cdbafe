#include "config/resolve.hpp"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include "config/env_settings.hpp"
#include "config/flag_settings.hpp"
#include "config/launch_rules.hpp"
#include "config/paths.hpp"
#include "config/usage_error.hpp"
#include "config/yaml_io.hpp"

using namespace xlaunch::config;
namespace fs = std::filesystem;

namespace {

Getenv fake_env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

/// A fresh directory under the system temp dir, removed at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "xlaunch-config-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempDir() { fs::remove_all(path); }
  std::string write(const std::string& name, const std::string& text) const {
    const fs::path file = path / name;
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text;
    return file.string();
  }
};

}  // namespace

TEST_CASE("precedence: flag > environment > file", "[resolve]") {
  TempDir dir;
  const std::string file =
      dir.write("c.yaml", "num_processes: 2\nmixed_precision: fp16\nlog_dir: /logs\n");
  Settings flags;
  flags.num_processes = 8;
  const auto r = resolve(
      flags, file, fake_env({{"XLAUNCH_NUM_PROCESSES", "4"}, {"XLAUNCH_MIXED_PRECISION", "bf16"}}));
  CHECK(r.settings.num_processes == 8);
  CHECK(r.settings.mixed_precision == MixedPrecision::Bf16);
  CHECK(r.settings.log_dir == "/logs");
  CHECK(r.config_file == file);
  CHECK(r.origins.at("num_processes") == Origin::Flag);
  CHECK(r.origins.at("mixed_precision") == Origin::Environment);
  CHECK(r.origins.at("log_dir") == Origin::File);
  CHECK(r.origins.count("gpu_ids") == 0);
  CHECK(to_string(Origin::Environment) == "environment");
}

TEST_CASE("XLAUNCH_* beats torchrun's PET_*, also across num_processes and nproc_per_node",
          "[resolve]") {
  Resolved r = resolve({}, std::nullopt,
                       fake_env({{"PET_NPROC_PER_NODE", "1"}, {"XLAUNCH_NUM_PROCESSES", "2"}}));
  CHECK(r.origins.at("nproc_per_node") == Origin::TorchrunEnvironment);
  CHECK(r.origins.at("num_processes") == Origin::Environment);
  CHECK(to_string(Origin::TorchrunEnvironment) == "environment");
  apply_launch_rules(r, [](const std::string&) { return true; });  // no contradiction
  CHECK(r.settings.num_processes == 2);
  CHECK_FALSE(r.settings.nproc_per_node);
}

TEST_CASE("a missing --config_file is a usage error naming it", "[resolve]") {
  TempDir dir;
  const std::string missing = (dir.path / "nope.yaml").string();
  try {
    resolve({}, missing, fake_env({}));
    FAIL("no error");
  } catch (const xlaunch::UsageError& e) {
    CHECK(std::string(e.what()).find(missing) != std::string::npos);
    CHECK(std::string(e.hint()).find("xlaunch config") != std::string::npos);
  }
}

TEST_CASE("the default file is read only when it exists", "[resolve]") {
  TempDir dir;
  const auto env = fake_env({{"HOME", dir.path.string()}});
  CHECK_FALSE(resolve({}, std::nullopt, env).config_file);

  const std::string file = dir.write(".config/xlaunch/default_config.yaml",
                                     "num_processes: 3\ndeepspeed_config: {a: 1}\n");
  const auto r = resolve({}, std::nullopt, env);
  CHECK(r.config_file == file);
  CHECK(r.settings.num_processes == 3);
  REQUIRE(r.notices.size() == 1);  // 'a' is no argument accelerate exports
  CHECK(r.notices[0].find("deepspeed_config.a") != std::string::npos);
}

TEST_CASE("XLAUNCH_CONFIG_FILE picks the default file", "[resolve]") {
  TempDir dir;
  const std::string file = dir.write("mine.yaml", "mixed_precision: bf16\n");
  const auto r = resolve({}, std::nullopt, fake_env({{"XLAUNCH_CONFIG_FILE", file}}));
  CHECK(r.config_file == file);
  CHECK(r.settings.mixed_precision == MixedPrecision::Bf16);

  const auto none = resolve({}, std::nullopt,
                            fake_env({{"XLAUNCH_CONFIG_FILE", (dir.path / "no.yaml").string()}}));
  CHECK_FALSE(none.config_file);
  REQUIRE(none.notices.size() == 1);
  CHECK(none.notices[0].find("does not exist") != std::string::npos);
}

TEST_CASE("default_config_path follows XDG", "[paths]") {
  CHECK(default_config_path(fake_env({{"HOME", "/home/u"}})) ==
        "/home/u/.config/xlaunch/default_config.yaml");
  CHECK(default_config_path(fake_env({{"HOME", "/home/u"}, {"XDG_CONFIG_HOME", "/x/"}})) ==
        "/x/xlaunch/default_config.yaml");
  CHECK(default_config_path(fake_env({{"HOME", "/home/u"}, {"XDG_CONFIG_HOME", "rel"}})) ==
        "/home/u/.config/xlaunch/default_config.yaml");
  CHECK(default_config_path(fake_env({{"HOME", "/h"}, {"XLAUNCH_CONFIG_FILE", "/c.yaml"}})) ==
        "/c.yaml");
  CHECK_FALSE(default_config_path(fake_env({})));
}

TEST_CASE("XLAUNCH_<KEY> variables set every key", "[env]") {
  const Settings s = settings_from_env(fake_env({{"XLAUNCH_NUM_PROCESSES", "4"},
                                                 {"XLAUNCH_MIXED_PRECISION", "fp16"},
                                                 {"XLAUNCH_DISTRIBUTED_TYPE", "DDP"},
                                                 {"XLAUNCH_GPU_IDS", "1,3"},
                                                 {"XLAUNCH_USE_CPU", "1"},
                                                 {"XLAUNCH_TERM_TIMEOUT", "5"},
                                                 {"XLAUNCH_LOG_DIR", ""}}));
  CHECK(s.num_processes == 4);
  CHECK(s.mixed_precision == MixedPrecision::Fp16);
  CHECK(s.distributed_type == DistributedType::MultiGpu);
  CHECK(s.gpu_ids == "1,3");
  CHECK(s.use_cpu == true);
  CHECK(s.term_timeout == 5.0);
  CHECK_FALSE(s.log_dir);  // empty means unset
}

TEST_CASE("bad environment values name every variable at once", "[env]") {
  try {
    settings_from_env(
        fake_env({{"XLAUNCH_NUM_PROCESSES", "lots"}, {"XLAUNCH_MIXED_PRECISION", "fp32"}}));
    FAIL("no error");
  } catch (const xlaunch::UsageError& e) {
    const std::string what = e.what();
    CHECK(what.find("(2 problems)") != std::string::npos);
    CHECK(what.find("environment variable XLAUNCH_NUM_PROCESSES: bad value 'lots' (allowed: an "
                    "integer >= 1)") != std::string::npos);
    CHECK(what.find("environment variable XLAUNCH_MIXED_PRECISION: bad value 'fp32'") !=
          std::string::npos);
  }
}

TEST_CASE("a bad file is reported before the environment is looked at", "[resolve]") {
  TempDir dir;
  const std::string file = dir.write("bad.yaml", "num_processes: x\n");
  CHECK_THROWS_AS(resolve({}, file, fake_env({})), xlaunch::UsageError);
}

TEST_CASE("a run id from the environment or a flag is checked like the file's", "[resolve]") {
  try {
    settings_from_env(fake_env({{"XLAUNCH_RDZV_ID", "../../tmp/x"}}));
    FAIL("no error");
  } catch (const xlaunch::UsageError& e) {
    CHECK(std::string(e.what()).find("environment variable XLAUNCH_RDZV_ID: bad value "
                                     "'../../tmp/x'") != std::string::npos);
  }
  try {
    settings_from_flags({{"rdzv_id", "a\nb"}, {"term_timeout", "9223372037"}});
    FAIL("no error");
  } catch (const xlaunch::UsageError& e) {
    CHECK(std::string(e.what()).find("flag --rdzv_id: bad value 'a\\nb'") != std::string::npos);
    CHECK(std::string(e.what()).find("flag --term_timeout: bad value '9223372037'") !=
          std::string::npos);
  }
}

TEST_CASE("a config file that is a directory is a usage error naming its source", "[resolve]") {
  TempDir dir;
  auto message_of = [](const std::function<void()>& f) -> std::string {
    try {
      f();
    } catch (const xlaunch::UsageError& e) {
      return e.what();
    }
    return "";
  };
  const std::string folder = dir.path.string();
  CHECK(message_of([&] { resolve({}, folder, fake_env({})); }) ==
        "config file " + folder + " is a directory (--config_file)");
  CHECK(message_of([&] {
          resolve({}, std::nullopt, fake_env({{"XLAUNCH_CONFIG_FILE", folder}}));
        }) == "config file " + folder + " is a directory (XLAUNCH_CONFIG_FILE)");
  CHECK(message_of([&] { load_config_file(folder); }).find("is a directory") != std::string::npos);
}

TEST_CASE("PET_* sits below XLAUNCH_* and above the file and is named as the origin", "[resolve]") {
  std::map<std::string, std::string> vars{
      {"PET_NNODES", "3"}, {"PET_MAX_RESTARTS", "2"}, {"XLAUNCH_MAX_RESTARTS", "5"}};
  auto getenv = [&](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
  Settings flags;
  const Resolved r = resolve(flags, std::nullopt, getenv);
  CHECK(r.settings.num_machines == 3);
  CHECK(r.settings.max_restarts == 5);
  CHECK(r.variables.at("num_machines") == "PET_NNODES");
  CHECK(r.variables.at("max_restarts") == "XLAUNCH_MAX_RESTARTS");
  flags.num_machines = 1;
  CHECK(resolve(flags, std::nullopt, getenv).settings.num_machines == 1);
}
