#include "config/resolve.hpp"

#include <fmt/core.h>

#include <filesystem>

#include "config/accelerate_env.hpp"
#include "config/env_settings.hpp"
#include "config/paths.hpp"
#include "config/regular_file.hpp"
#include "config/schema.hpp"
#include "config/usage_error.hpp"
#include "config/yaml_io.hpp"

namespace xlaunch::config {
namespace {

/// A folder reads as an empty file, which would silently drop every setting in it.
void reject_directory(const std::string& path, std::string_view source) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw UsageError(fmt::format("config file {} is a directory ({})", path, source),
                     fmt::format("give the YAML file itself, e.g. {}/default_config.yaml",
                                 path.ends_with('/') ? path.substr(0, path.size() - 1) : path));
  }
}

// A config file found by its default path or XLAUNCH_CONFIG_FILE is read as a plain file: a
// FIFO left there would wait for a writer that never comes, silently, at every launch. Only
// --config_file takes a stream (a pipe from <(...)).
void reject_not_plain(const std::string& path, std::string_view source) {
  const std::optional<std::string> kind = non_regular_kind(path);
  if (!kind) return;
  throw UsageError(
      fmt::format("config file {} is not a plain file ({}: {})", path, source, *kind),
      "remove it and write one with 'xlaunch config', or give a file with --config_file");
}

}  // namespace

std::string_view to_string(Origin origin) {
  switch (origin) {
    case Origin::Default:
      return "default";
    case Origin::File:
      return "file";
    case Origin::Environment:
    case Origin::TorchrunEnvironment:
      return "environment";
    case Origin::Flag:
      return "flag";
  }
  return "default";
}

Resolved resolve(const Settings& flags, const std::optional<std::string>& config_file_flag,
                 const std::function<std::optional<std::string>(const std::string&)>& getenv) {
  Resolved out;
  if (config_file_flag) {
    std::error_code ec;
    if (!std::filesystem::exists(*config_file_flag, ec)) {
      throw UsageError(
          fmt::format("config file {} does not exist (--config_file)", *config_file_flag),
          fmt::format("create it with 'xlaunch config --config_file {}', or check "
                      "the path",
                      *config_file_flag));
    }
    reject_directory(*config_file_flag, "--config_file");
    out.config_file = *config_file_flag;
  } else if (auto path = default_config_path(getenv)) {
    std::error_code ec;
    if (std::filesystem::exists(*path, ec)) {
      const auto named = getenv("XLAUNCH_CONFIG_FILE");
      const std::string_view source =
          named && !named->empty() ? "XLAUNCH_CONFIG_FILE" : "the default config file";
      reject_directory(*path, source);
      reject_not_plain(*path, source);
      out.config_file = *path;
    } else if (auto named = getenv("XLAUNCH_CONFIG_FILE"); named && !named->empty()) {
      out.notices.push_back(fmt::format(
          "XLAUNCH_CONFIG_FILE names {}, which does not exist; no config file read", *named));
    }
  }

  // No xlaunch config at all: accelerate's own default config, as `accelerate launch` reads it.
  const auto named_file = getenv("XLAUNCH_CONFIG_FILE");
  if (!out.config_file && !config_file_flag && (!named_file || named_file->empty())) {
    std::error_code ec;
    if (auto path = accelerate_default_config_path(getenv);
        path && std::filesystem::is_regular_file(*path, ec)) {
      out.config_file = *path;
      out.notices.push_back(
          fmt::format("no xlaunch config file; using accelerate's default config {}", *path));
    }
  }

  Settings file;
  if (out.config_file) {
    LoadedConfig loaded = load_config_file(*out.config_file);
    file = std::move(loaded.settings);
    out.places = std::move(loaded.places);
    out.notices.insert(out.notices.end(), loaded.notices.begin(), loaded.notices.end());
  }
  // torchrun's PET_* sit below xlaunch's own XLAUNCH_* (the more specific of the two).
  const Settings pet = settings_from_pet_env(getenv, &out.notices);
  const Settings env = settings_from_env(getenv, &out.notices);
  out.settings = merge(merge(merge(file, pet), env), flags);

  for (const KeySpec& key : schema()) {
    if (key.print(flags)) {
      out.origins[std::string(key.name)] = Origin::Flag;
    } else if (key.print(env)) {
      out.origins[std::string(key.name)] = Origin::Environment;
      out.variables[std::string(key.name)] = env_var_name(key.name);
    } else if (key.print(pet)) {
      out.origins[std::string(key.name)] = Origin::TorchrunEnvironment;
      for (const PetVariable& variable : pet_variables()) {
        if (variable.key == key.name && getenv(std::string(variable.name)).value_or("") != "") {
          out.variables[std::string(key.name)] = std::string(variable.name);
          break;
        }
      }
    } else if (key.print(file)) {
      out.origins[std::string(key.name)] = Origin::File;
    }
  }
  return out;
}

std::map<std::string, std::string> sources(const Resolved& r) {
  std::map<std::string, std::string> out;
  for (const auto& [key, origin] : r.origins) {
    switch (origin) {
      case Origin::Flag:
        out[key] = "the command line";
        break;
      case Origin::Environment:
      case Origin::TorchrunEnvironment:
        out[key] = r.variables.contains(key) ? r.variables.at(key) : "the environment";
        break;
      case Origin::File:
        out[key] = r.places.contains(key) ? r.places.at(key)
                                          : "config file " + r.config_file.value_or("?");
        break;
      case Origin::Default:
        break;
    }
  }
  return out;
}

}  // namespace xlaunch::config
