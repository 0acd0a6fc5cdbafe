// How the key table (schema_keys.cpp) is built: one KeySpec maker per kind of value, and the
// value checks several keys share.
#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "config/schema_table.hpp"
#include "config/text.hpp"

namespace xlaunch::config::detail {
namespace {

std::string format_number(double value) {
  // Whole seconds print as "30", not "30.000000", so written files read naturally.
  if (std::floor(value) == value && std::fabs(value) < 1e15) {
    return fmt::format("{}", static_cast<long long>(value));
  }
  return fmt::format("{}", value);
}

}  // namespace

KeySpec int_key(std::string_view name, Field<int> field, long long min, long long max,
                std::string_view allowed, std::string_view help) {
  return {name,
          ValueKind::Integer,
          allowed,
          help,
          [field, min, max](std::string_view text, Settings& into, std::string&) {
            const auto value = parse_integer(text);
            if (!value || *value < min || *value > max) return false;
            into.*field = static_cast<int>(*value);
            return true;
          },
          [field](const Settings& from) -> std::optional<std::string> {
            if (!(from.*field)) return std::nullopt;
            return std::to_string(*(from.*field));
          }};
}

KeySpec seconds_key(std::string_view name, Field<double> field, bool zero_ok,
                    std::string_view allowed, std::string_view help) {
  return {name,
          ValueKind::Number,
          allowed,
          help,
          [field, zero_ok](std::string_view text, Settings& into, std::string&) {
            const auto value = parse_number(text);
            if (!value || !std::isfinite(*value) || *value < 0 || (!zero_ok && *value == 0) ||
                *value > kMaxSeconds) {
              return false;
            }
            into.*field = *value;
            return true;
          },
          [field](const Settings& from) -> std::optional<std::string> {
            if (!(from.*field)) return std::nullopt;
            return format_number(*(from.*field));
          }};
}

KeySpec bool_key(std::string_view name, Field<bool> field, std::string_view help) {
  return {name,
          ValueKind::Boolean,
          "true or false",
          help,
          [field](std::string_view text, Settings& into, std::string&) {
            const auto value = parse_boolean(text);
            if (!value) return false;
            into.*field = *value;
            return true;
          },
          [field](const Settings& from) -> std::optional<std::string> {
            if (!(from.*field)) return std::nullopt;
            return *(from.*field) ? "true" : "false";
          }};
}

KeySpec text_key(std::string_view name, Field<std::string> field, ValueKind kind,
                 std::string_view allowed, std::string_view help,
                 std::function<std::optional<std::string>(std::string_view)> check) {
  return {name,
          kind,
          allowed,
          help,
          [field, check](std::string_view text, Settings& into, std::string&) {
            auto value = check(trim(text));
            if (!value) return false;
            into.*field = std::move(*value);
            return true;
          },
          [field](const Settings& from) { return from.*field; }};
}

std::optional<std::string> non_empty(std::string_view text) {
  if (text.empty()) return std::nullopt;
  return std::string(text);
}

std::optional<std::string> host_name(std::string_view text) {
  if (text.empty() || std::any_of(text.begin(), text.end(), [](unsigned char c) {
        return std::isspace(c) || c == '/' || c == ',';
      })) {
    return std::nullopt;
  }
  // An IPv6 address as URLs write it ([::1]): the address is what the OS resolves.
  if (text.size() > 2 && text.front() == '[' && text.back() == ']' &&
      text.find(':') != std::string_view::npos) {
    text = text.substr(1, text.size() - 2);
  }
  if (text.find_first_of("[]") != std::string_view::npos) return std::nullopt;
  return std::string(text);
}

std::optional<std::string> one_of(std::string_view text,
                                  std::initializer_list<std::string_view> choices) {
  const std::string t = lower(text);
  for (std::string_view choice : choices) {
    if (t == lower(choice)) return std::string(choice);
  }
  return std::nullopt;
}

bool is_index_list(std::string_view text) {
  if (text.empty()) return false;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const auto value = parse_integer(text.substr(start, comma - start));
    if (!value || *value < 0) return false;
    start = comma + 1;
  }
  return true;
}

std::string without_blanks(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (!std::isspace(static_cast<unsigned char>(c))) out += c;
  }
  return out;
}

std::optional<std::string> std_streams(std::string_view text) {
  const std::string t = without_blanks(text);
  if (t.empty()) return std::nullopt;
  std::size_t start = 0;
  while (start <= t.size()) {
    const std::size_t comma = std::min(t.find(',', start), t.size());
    std::string_view item = std::string_view(t).substr(start, comma - start);
    const std::size_t colon = item.find(':');
    if (colon != std::string_view::npos) {
      const auto rank = parse_integer(item.substr(0, colon));
      if (!rank || *rank < 0) return std::nullopt;
      item = item.substr(colon + 1);
    } else if (t.find(',') != std::string::npos) {
      return std::nullopt;  // a list must map ranks
    }
    const auto value = parse_integer(item);
    if (!value || *value < 0 || *value > 3) return std::nullopt;
    start = comma + 1;
  }
  return t;
}

}  // namespace xlaunch::config::detail
