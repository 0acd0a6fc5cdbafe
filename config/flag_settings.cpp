#include "config/flag_settings.hpp"

#include <fmt/core.h>

#include "config/schema.hpp"
#include "config/validate.hpp"

namespace xlaunch::config {

Settings settings_from_flags(const std::vector<std::pair<std::string, std::string>>& given,
                             std::vector<std::string>* notices) {
  Settings out;
  std::vector<std::string> problems;
  for (const auto& [key, value] : given) {
    const KeySpec* spec = find_key(key);
    std::string notice;
    if (spec == nullptr) {
      problems.push_back(fmt::format("flag --{}: not a config key", key));
    } else if (!spec->parse(value, out, notice)) {
      problems.push_back(fmt::format("flag --{}: bad value '{}'{} (allowed: {})", key,
                                     printable(value), refusal_reason(notice), spec->allowed));
    } else if (!notice.empty() && notices != nullptr) {
      notices->push_back(fmt::format("flag --{}: {}", key, notice));
    }
  }
  throw_if_problems("invalid flags", problems, "docs/config.md lists every key's values");
  return out;
}

}  // namespace xlaunch::config
