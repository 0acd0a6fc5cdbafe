#include "config/module_list.hpp"

#include <fmt/format.h>

#include "config/text.hpp"

namespace xlaunch::config {
namespace {

bool is_identifier(std::string_view part) {
  if (part.empty() || (part.front() >= '0' && part.front() <= '9')) return false;
  for (char c : part) {
    const bool ok =
        c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

}  // namespace

std::optional<std::string> normalize_module_list(std::string_view text) {
  if (trim(text).empty()) return std::string();
  std::vector<std::string_view> names;
  for (std::string_view item : split(text, ',')) {
    const std::string_view name = trim(item);
    for (std::string_view part : split(name, '.')) {
      if (!is_identifier(part)) return std::nullopt;
    }
    names.push_back(name);
  }
  return fmt::format("{}", fmt::join(names, ","));
}

std::vector<std::string> module_names(std::string_view normalized) {
  std::vector<std::string> out;
  if (normalized.empty()) return out;
  for (std::string_view name : split(normalized, ',')) out.emplace_back(name);
  return out;
}

}  // namespace xlaunch::config
