#include "config/yaml_io.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <utility>
#include <vector>

#include "config/accelerate_keys.hpp"
#include "config/atomic_write.hpp"
#include "config/regular_file.hpp"
#include "config/schema.hpp"
#include "config/usage_error.hpp"
#include "config/validate.hpp"

namespace xlaunch::config {
namespace {

/// Text values that YAML would read back as another type must be quoted.
bool needs_quotes(const std::string& text) {
  return text.empty() || parse_boolean(text) || parse_number(text) || text == "null" ||
         text == "~" || text == "Null" || text == "NULL";
}

// A container's place in the text and its kind: the same for every alias of one anchor.
using NodeIdentity = std::pair<int, YAML::NodeType::value>;

/// A "\0" escape in a quoted scalar: the value would be cut short where the OS reads it.
/// Each container is looked at once however many aliases name it: a few hundred bytes of
/// nested aliases ("billion laughs") would otherwise take hours to walk.
void refuse_nul_scalars(const YAML::Node& node, const std::string& origin,
                        std::set<NodeIdentity>& seen) {
  if (node.IsScalar()) {
    if (node.Scalar().find('\0') == std::string::npos) return;
    const YAML::Mark at = node.Mark();
    throw UsageError(fmt::format("cannot read config file {}:\n{}:{}:{}: a value holding a NUL "
                                 "character (\\0)",
                                 origin, origin, at.line + 1, at.column + 1),
                     "no path, name or number holds one: remove the \\0");
  }
  if (!node.IsSequence() && !node.IsMap()) return;
  if (const YAML::Mark at = node.Mark();
      !at.is_null() && !seen.emplace(at.pos, node.Type()).second) {
    return;
  }
  for (const auto& item : node) {
    if (node.IsMap()) {
      refuse_nul_scalars(item.first, origin, seen);
      refuse_nul_scalars(item.second, origin, seen);
    } else {
      refuse_nul_scalars(item, origin, seen);
    }
  }
}

}  // namespace

YAML::Node parse_yaml(const std::string& text, const std::string& origin) {
  // yaml-cpp reads a NUL byte as an escape and prints it raw: name where it is instead.
  if (const auto nul = text.find('\0'); nul != std::string::npos) {
    const auto line_start = text.rfind('\n', nul);
    const auto line =
        std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(nul), '\n');
    const auto column = nul - (line_start == std::string::npos ? 0 : line_start + 1);
    throw UsageError(fmt::format("cannot read config file {}:\n{}:{}:{}: a NUL byte; a config "
                                 "file is text",
                                 origin, origin, line + 1, column + 1),
                     "is this the right file? A config file is one 'key: value' per line; see "
                     "docs/config.md");
  }
  try {
    std::vector<YAML::Node> documents = YAML::LoadAll(text);
    if (documents.size() > 1) {
      // yaml-cpp's Load took the first and dropped the rest without a word; PyYAML's
      // safe_load (accelerate) refuses such a file.
      const YAML::Mark at = documents[1].Mark();
      throw UsageError(
          fmt::format("cannot read config file {}:\n{}: a second YAML document; a config file "
                      "holds one",
                      origin, at.is_null() ? origin : fmt::format("{}:{}", origin, at.line + 1)),
          "remove the '---' line and what follows it, or merge the documents");
    }
    YAML::Node root = documents.empty() ? YAML::Node() : documents[0];
    std::set<NodeIdentity> seen;
    refuse_nul_scalars(root, origin, seen);
    return root;
  } catch (const YAML::ParserException& e) {
    const std::string at =
        e.mark.is_null() ? origin
                         : fmt::format("{}:{}:{}", origin, e.mark.line + 1, e.mark.column + 1);
    throw UsageError(fmt::format("cannot read config file {}:\n{}: malformed YAML: {}", origin, at,
                                 printable(e.msg)),
                     "a config file is one 'key: value' per line; see docs/config.md");
  }
}

std::string read_text_file(const std::string& path) {
  // A config file is a few KiB; the cap keeps a wrong path (/dev/zero, a log) from eating memory.
  constexpr std::size_t max_bytes = 4u << 20;
  RegularFile file = read_bounded_stream(path, max_bytes);
  switch (file.status) {
    case RegularFile::Status::Ok:
      return std::move(file.text);
    case RegularFile::Status::Missing:
      throw UsageError(fmt::format("cannot open config file {}: {}", path, std::strerror(ENOENT)),
                       "check the path, or create the file with 'xlaunch config'");
    case RegularFile::Status::NotRegular:
      // read_bounded_stream refuses folders only.
      throw UsageError(fmt::format("cannot read config file {}: it is a directory", path),
                       "give the YAML file itself, not its folder");
    case RegularFile::Status::TooLarge:
      throw UsageError(
          fmt::format("cannot read config file {}: more than {} MiB", path, max_bytes >> 20),
          "is this the right file? A config file is one 'key: value' per line; see "
          "docs/config.md");
    case RegularFile::Status::Unreadable:
      break;
  }
  throw UsageError(fmt::format("cannot open config file {}: {}", path, std::strerror(file.error)),
                   "check the path and its permissions, or create the file with 'xlaunch config'");
}

LoadedConfig load_config_text(const std::string& text, const std::string& origin) {
  return validate_document(parse_yaml(text, origin), origin);
}

LoadedConfig load_config_file(const std::string& path) {
  return load_config_text(read_text_file(path), path);
}

std::string to_yaml(const Settings& settings) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  for (const KeySpec& key : schema()) {
    const auto value = key.print(settings);
    if (!value) continue;
    out << YAML::Key << std::string(key.name) << YAML::Value;
    // PyYAML (accelerate) reads a bare NO or no as false, and 1:4 as 64 (YAML 1.1's base 60),
    // so such values are quoted.
    if (((key.kind == ValueKind::Text || key.kind == ValueKind::Choice) && needs_quotes(*value)) ||
        value->find(':') != std::string::npos) {
      out << YAML::SingleQuoted << *value;
    } else {
      out << *value;
    }
  }
  // accelerate's own keys, as its files hold them: a config written from one keeps them.
  std::string section;
  for (const AccelerateFileKey& key : accelerate_file_keys(settings.accelerate)) {
    if (key.section != section) {
      if (!section.empty()) out << YAML::EndMap;
      section = key.section;
      if (!section.empty()) out << YAML::Key << section << YAML::Value << YAML::BeginMap;
    }
    out << YAML::Key << key.name << YAML::Value;
    if (key.text && needs_quotes(key.value)) {
      out << YAML::SingleQuoted << key.value;
    } else {
      out << key.value;
    }
  }
  if (!section.empty()) out << YAML::EndMap;
  out << YAML::EndMap;
  return fmt::format("# xlaunch config (docs/config.md); accelerate's keys keep their names\n{}\n",
                     out.c_str());
}

std::string config_write_target(const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty()) {
    throw UsageError("the config file's path is empty",
                     "give a file name, e.g. --config_file "
                     "~/.config/xlaunch/default_config.yaml");
  }
  fs::path target(path);
  // 40 links, as the kernel's own limit for one path.
  for (int hops = 0; hops <= 40; ++hops) {
    std::error_code ec;
    const fs::file_status status = fs::symlink_status(target, ec);
    if (fs::is_symlink(status)) {
      const fs::path next = fs::read_symlink(target, ec);
      if (ec) break;
      target = next.is_absolute() ? next : target.parent_path() / next;
      continue;
    }
    if (fs::is_directory(status) || !target.has_filename()) {
      throw UsageError(
          fmt::format("cannot write config file {}: it is a directory", path),
          "give a file name, e.g. " + (fs::path(path) / "default_config.yaml").string());
    }
    // Renamed over, a FIFO or a device (sudo ... --config_file /dev/null) would be replaced.
    if (fs::exists(status) && !fs::is_regular_file(status)) {
      throw UsageError(
          fmt::format("cannot write config file {}: {} is not a plain file", path, target.string()),
          "give the path of a YAML file, e.g. --config_file "
          "~/.config/xlaunch/default_config.yaml");
    }
    return target.string();
  }
  throw UsageError(fmt::format("cannot write config file {}: too many levels of links", path),
                   "point the link at a file");
}

void save_config(const std::string& path, const Settings& settings) {
  atomic_write(config_write_target(path), to_yaml(settings));
}

}  // namespace xlaunch::config
