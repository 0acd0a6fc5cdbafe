// The strict scalar parsers and value checks of schema.hpp that the YAML, environment and
// flag paths share.
#include <algorithm>
#include <charconv>

#include "config/schema.hpp"
#include "config/schema_table.hpp"
#include "config/text.hpp"

namespace xlaunch::config {

std::optional<long long> parse_integer(std::string_view text) {
  text = trim(text);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  long long value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

std::optional<double> parse_number(std::string_view text) {
  text = trim(text);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

std::optional<bool> parse_boolean(std::string_view text) {
  const std::string t = lower(trim(text));
  if (t == "true" || t == "yes" || t == "on" || t == "y" || t == "1") return true;
  if (t == "false" || t == "no" || t == "off" || t == "n" || t == "0") return false;
  return std::nullopt;
}

bool is_valid_run_id(std::string_view text) {
  auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  if (text.empty() || text.size() > kMaxRunIdLength || !alnum(text.front())) return false;
  return std::all_of(text.begin(), text.end(),
                     [&](char c) { return alnum(c) || c == '.' || c == '_' || c == '-'; });
}

std::optional<std::string> normalize_gpu_ids(std::string_view text) {
  const std::string t = detail::without_blanks(text);
  if (lower(t) == "all") return std::string("all");
  if (!detail::is_index_list(t)) return std::nullopt;
  return t;
}

}  // namespace xlaunch::config
