// Small string helpers shared by every module (config/ is the lowest one): blanks, splitting,
// whole-string integers, case, JSON string literals and timestamps.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

namespace xlaunch::config {

/// Without leading and trailing blanks.
std::string_view trim(std::string_view text);
/// Splits on `sep`, keeping empty pieces ("a,,b" → a, "", b).
std::vector<std::string_view> split(std::string_view text, char sep);
/// Parses a whole string (blanks trimmed) as a base-10 int; false on junk or overflow.
bool parse_int(std::string_view text, int& out);
/// ASCII lower / upper case.
std::string lower(std::string_view text);
std::string upper(std::string_view text);

/// A JSON string literal (quotes included), escaping control characters and invalid UTF-8
/// bytes so that arbitrary worker output can be embedded.
std::string json_quote(std::string_view text);

/// The length of the well-formed UTF-8 sequence `text` starts with (1 for ASCII); 0 when it
/// does not start with one (a stray, overlong, surrogate or out-of-range byte sequence).
std::size_t utf8_sequence_length(std::string_view text);

/// ISO 8601 UTC with milliseconds, e.g. 2026-11-21T23:05:01.123Z.
std::string iso_time(std::chrono::system_clock::time_point time);

}  // namespace xlaunch::config
