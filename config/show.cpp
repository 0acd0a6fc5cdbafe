#include "config/show.hpp"

#include <fmt/core.h>

#include <algorithm>

#include "config/accelerate_keys.hpp"
#include "config/schema.hpp"

namespace xlaunch::config {

std::string format_show(const Resolved& resolved, const std::optional<std::string>& default_file) {
  std::string out;
  if (resolved.config_file) {
    out += fmt::format("config file: {}\n\n", *resolved.config_file);
  } else if (default_file) {
    out += fmt::format("config file: none ({} does not exist)\n\n", *default_file);
  } else {
    out += "config file: none\n\n";
  }
  std::size_t key_width = 3;
  std::size_t value_width = 5;
  for (const KeySpec& key : schema()) {
    key_width = std::max(key_width, key.name.size());
    value_width = std::max(value_width, key.print(resolved.settings).value_or("-").size());
  }
  out += fmt::format("{:<{}}  {:<{}}  {}\n", "key", key_width, "value", value_width, "from");
  for (const KeySpec& key : schema()) {
    const auto value = key.print(resolved.settings);
    const auto origin = resolved.origins.find(std::string(key.name));
    std::string from = "default (decided at launch)";
    if (value && origin != resolved.origins.end()) {
      switch (origin->second) {
        case Origin::Flag:
          from = fmt::format("flag --{}", key.name);
          break;
        case Origin::Environment:
        case Origin::TorchrunEnvironment:
          from = "environment " + (resolved.variables.contains(std::string(key.name))
                                       ? resolved.variables.at(std::string(key.name))
                                       : env_var_name(key.name));
          break;
        case Origin::File:
          from = "file";
          break;
        case Origin::Default:
          from = "default";
          break;
      }
    }
    out += fmt::format("{:<{}}  {:<{}}  {}\n", key.name, key_width, value.value_or("-"),
                       value_width, from);
  }
  out += format_accelerate_args(resolved.settings.accelerate);
  return out;
}

}  // namespace xlaunch::config
