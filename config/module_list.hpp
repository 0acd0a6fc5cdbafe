// --preload's value: a comma-separated list of Python module names (docs/launch.md).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xlaunch::config {

/// "torch, numpy" -> "torch,numpy"; "" stays "" (off). nullopt when an item is not a dotted
/// Python module name (letters, digits and underscores, not starting with a digit).
std::optional<std::string> normalize_module_list(std::string_view text);

/// The names of a normalised list; none for "".
std::vector<std::string> module_names(std::string_view normalized);

}  // namespace xlaunch::config
