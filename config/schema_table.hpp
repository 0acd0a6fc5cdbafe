// Internal to config/: the table of keys (schema_keys.cpp) and what it is built from
// (key_builders.cpp): one KeySpec maker per kind of value, and the value checks several keys
// share. schema.hpp is the public side.
#pragma once

#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/schema.hpp"

namespace xlaunch::config::detail {

/// Every key, in the order files are written (schema() keeps one copy).
std::vector<KeySpec> build_schema();

template <typename T>
using Field = std::optional<T> Settings::*;

/// An integer in [min, max].
KeySpec int_key(std::string_view name, Field<int> field, long long min, long long max,
                std::string_view allowed, std::string_view help);
/// Seconds >= 0 (> 0 unless `zero_ok`), finite, at most kMaxSeconds.
KeySpec seconds_key(std::string_view name, Field<double> field, bool zero_ok,
                    std::string_view allowed, std::string_view help);
KeySpec bool_key(std::string_view name, Field<bool> field, std::string_view help);
/// `check` normalises the text or rejects it with nullopt.
KeySpec text_key(std::string_view name, Field<std::string> field, ValueKind kind,
                 std::string_view allowed, std::string_view help,
                 std::function<std::optional<std::string>(std::string_view)> check);

/// Value checks for text_key: the value as kept, or nullopt when it is not allowed.
std::optional<std::string> non_empty(std::string_view text);
/// Not empty; no blank, '/' or ','.
std::optional<std::string> host_name(std::string_view text);
/// One of `choices`, case-insensitively, spelled as in `choices`.
std::optional<std::string> one_of(std::string_view text,
                                  std::initializer_list<std::string_view> choices);
/// torchrun's --tee/--redirects: 0-3 for every rank, or "rank:value" pairs ("0:3,1:2").
std::optional<std::string> std_streams(std::string_view text);

/// "1,3" -> true; every comma-separated item must be a non-negative integer.
bool is_index_list(std::string_view text);
std::string without_blanks(std::string_view text);

}  // namespace xlaunch::config::detail
