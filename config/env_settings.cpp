#include "config/env_settings.hpp"

#include <fmt/core.h>

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

Settings settings_from_env(const Getenv& getenv, std::vector<std::string>* notices) {
  Settings out;
  std::vector<std::string> problems;
  for (const KeySpec& key : schema()) {
    const std::string name = env_var_name(key.name);
    const auto value = getenv(name);
    // `export XLAUNCH_GPU_IDS=` is the shell's way of switching a variable off.
    if (!value || value->empty()) continue;
    std::string notice;
    if (!key.parse(*value, out, notice)) {
      problems.push_back(fmt::format("environment variable {}: bad value '{}' (allowed: {})", name,
                                     printable(*value), key.allowed));
    } else if (!notice.empty() && notices != nullptr) {
      notices->push_back(fmt::format("environment variable {}: {}", name, notice));
    }
  }
  throw_if_problems("invalid XLAUNCH_* environment variables", problems,
                    "fix or unset the variables above; docs/config.md lists the allowed values");
  return out;
}

}  // namespace xlaunch::config
