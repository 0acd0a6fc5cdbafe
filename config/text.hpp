// Small string helpers shared by the config module's pure code.
#pragma once

#include <string>
#include <string_view>

namespace xlaunch::config {

/// Without leading and trailing blanks.
std::string_view trim(std::string_view text);
/// ASCII lower / upper case.
std::string lower(std::string_view text);
std::string upper(std::string_view text);

}  // namespace xlaunch::config
