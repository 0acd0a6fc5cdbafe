#include "config/env_settings.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>

#include "config/schema.hpp"
#include "config/validate.hpp"

namespace xlaunch::config {

Getenv process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

const std::vector<std::string_view>& worker_only_variables() {
  static const std::vector<std::string_view> names = {"XLAUNCH_LOG_DIR", "XLAUNCH_DISTRIBUTED_TYPE",
                                                      "XLAUNCH_MIXED_PRECISION"};
  return names;
}

Settings settings_from_env(const Getenv& getenv, std::vector<std::string>* notices) {
  Settings out;
  std::vector<std::string> problems;
  // A launch inside a worker of another xlaunch job (XLAUNCH_RUN_ID set) inherits the
  // variables that job gave its workers: they describe that job, not this one.
  const auto outer = getenv("XLAUNCH_RUN_ID");
  const bool in_worker = outer && !outer->empty();
  for (const KeySpec& key : schema()) {
    const std::string name = env_var_name(key.name);
    const auto value = getenv(name);
    // `export XLAUNCH_GPU_IDS=` is the shell's way of switching a variable off.
    if (!value || value->empty()) continue;
    if (in_worker && std::find(worker_only_variables().begin(), worker_only_variables().end(),
                               name) != worker_only_variables().end()) {
      if (notices != nullptr) {
        notices->push_back(fmt::format(
            "environment variable {} ignored: it describes the xlaunch job '{}' this launch "
            "runs in (XLAUNCH_RUN_ID is set); give this launch its own with --{}",
            name, printable(*outer), key.name));
      }
      continue;
    }
    std::string notice;
    if (!key.parse(*value, out, notice)) {
      problems.push_back(fmt::format("environment variable {}: bad value '{}'{} (allowed: {})",
                                     name, printable(*value), refusal_reason(notice), key.allowed));
    } else if (!notice.empty() && notices != nullptr) {
      notices->push_back(fmt::format("environment variable {}: {}", name, notice));
    }
  }
  throw_if_problems("invalid XLAUNCH_* environment variables", problems,
                    "fix or unset the variables above; docs/config.md lists the allowed values");
  return out;
}

const std::vector<PetVariable>& pet_variables() {
  static const std::vector<PetVariable> variables = {
      {"PET_NNODES", "num_machines"},
      {"PET_NPROC_PER_NODE", "nproc_per_node"},
      {"PET_NODE_RANK", "machine_rank"},
      {"PET_MASTER_ADDR", "main_process_ip"},
      {"PET_MASTER_PORT", "main_process_port"},
      {"PET_RDZV_BACKEND", "rdzv_backend"},
      {"PET_RDZV_ENDPOINT", "rdzv_endpoint"},
      {"PET_RDZV_ID", "rdzv_id"},
      {"PET_RDZV_CONF", "rdzv_conf"},
      {"PET_MAX_RESTARTS", "max_restarts"},
      {"PET_LOG_DIR", "log_dir"},
      {"PET_REDIRECTS", "redirects"},
      {"PET_TEE", "tee"},
      {"PET_LOCAL_RANKS_FILTER", "local_ranks_filter"},
      {"PET_ROLE", "role"},
      {"PET_LOCAL_ADDR", "local_addr"},
      {"PET_SIGNALS_TO_HANDLE", "signals_to_handle"},
      {"PET_SHUTDOWN_TIMEOUT", "term_timeout"},
      {"PET_VIRTUAL_LOCAL_RANK", "virtual_local_rank", true},
      // Not a flag's: torchrun's workers run under it, else torchrun's own interpreter.
      {"PYTHON_EXEC", "python"},
  };
  return variables;
}

bool names_pet_variable(const Getenv& getenv) {
  return std::any_of(pet_variables().begin(), pet_variables().end(), [&](const PetVariable& v) {
    const auto value = getenv(std::string(v.name));
    return v.name.starts_with("PET_") && value && !value->empty();
  });
}

Settings settings_from_pet_env(const Getenv& getenv, std::vector<std::string>* notices) {
  Settings out;
  std::vector<std::string> problems;
  for (const PetVariable& variable : pet_variables()) {
    const std::string name(variable.name);
    auto value = getenv(name);
    if (!value || value->empty()) continue;
    const KeySpec* spec = find_key(variable.key);
    std::string text = *value;
    if (variable.is_switch) {
      const auto number = parse_integer(text);
      if (!number) {
        problems.push_back(fmt::format("environment variable {}: bad value '{}' (allowed: 0 or 1)",
                                       name, printable(text)));
        continue;
      }
      text = *number != 0 ? "true" : "false";
    }
    std::string notice;
    if (!spec->parse(text, out, notice)) {
      problems.push_back(fmt::format("environment variable {}: bad value '{}'{} (allowed: {})",
                                     name, printable(text), refusal_reason(notice), spec->allowed));
    } else if (!notice.empty() && notices != nullptr) {
      notices->push_back(fmt::format("environment variable {}: {}", name, notice));
    }
  }
  throw_if_problems("invalid PET_* environment variables (torchrun's)", problems,
                    "fix or unset the variables above; docs/launch.md lists torchrun's flags");
  return out;
}

std::vector<std::string> unknown_xlaunch_variables(const std::vector<std::string>& names) {
  // Variables xlaunch reads that are not settings, and those it gives its workers (a
  // nested launch inherits them).
  // A variable xlaunch (or its tests) starts reading belongs here, or it draws this warning.
  static constexpr std::string_view kOther[] = {
      "XLAUNCH_CONFIG_FILE", "XLAUNCH_CONTAINMENT", "XLAUNCH_NVML_LIBRARY", "XLAUNCH_RUN_ID",
      "XLAUNCH_LOG_DIR", "XLAUNCH_MIXED_PRECISION", "XLAUNCH_DISTRIBUTED_TYPE",
      "XLAUNCH_CLIENT_TIMEOUT", "XLAUNCH_SELFTEST_RESULTS", "XLAUNCH_SELFTEST",
      // The project's own test scripts'.
      "XLAUNCH_BIN", "XLAUNCH_BUILD_DIR", "XLAUNCH_TEST_PYTHON", "XLAUNCH_FAKE_NVML_SCRIPT",
      "XLAUNCH_CONTAINMENT_TEST", "XLAUNCH_TORCH26_ROOT", "XLAUNCH_TORCH26_BINDS",
      "XLAUNCH_DEBIAN_MIRROR", "XLAUNCH_MARKER", "XLAUNCH_STACKS_DIR", "XLAUNCH_STACKS_SIGNAL",
      "XLAUNCH_PRELOAD_TEMPLATE", "XLAUNCH_PREBUILD_ASAN"};
  static constexpr std::string_view kOtherPrefixes[] = {"XLAUNCH_STRESS_"};
  std::vector<std::string> known;
  for (const KeySpec& key : schema()) known.push_back(env_var_name(key.name));
  for (std::string_view other : kOther) known.emplace_back(other);
  std::vector<std::string> out;
  for (const std::string& name : names) {
    if (!name.starts_with("XLAUNCH_")) continue;
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    if (std::any_of(std::begin(kOtherPrefixes), std::end(kOtherPrefixes),
                    [&](std::string_view prefix) { return name.starts_with(prefix); })) {
      continue;
    }
    std::string best;
    std::size_t best_distance = std::max<std::size_t>(2, (name.size() - 8) / 3) + 1;
    for (const std::string& candidate : known) {
      const std::size_t d = edit_distance(name, candidate);
      if (d < best_distance) best_distance = d, best = candidate;
    }
    out.push_back(best.empty()
                      ? fmt::format("{} is not an xlaunch variable; it has no effect", name)
                      : fmt::format("{} is not an xlaunch variable; it has no effect (did you "
                                    "mean {}?)",
                                    name, best));
  }
  return out;
}

}  // namespace xlaunch::config
