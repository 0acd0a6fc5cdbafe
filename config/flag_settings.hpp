// Settings from generic `--<key> VALUE` flags (used by `config default` and `config show`).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "config/settings.hpp"

namespace xlaunch::config {

/// Parses (key, value) pairs with the schema. Throws one UsageError listing every bad one as
/// "flag --key: bad value 'v' (allowed: ...)"; an unknown key is a programming error there.
/// What the user should know of an accepted value goes to `notices` ("flag --key: ...").
Settings settings_from_flags(const std::vector<std::pair<std::string, std::string>>& given,
                             std::vector<std::string>* notices = nullptr);

}  // namespace xlaunch::config
