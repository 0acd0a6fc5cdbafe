// The YAML keys xlaunch understands: their types, allowed values and how each maps onto a
// Settings field. One table drives the file loader, the XLAUNCH_* environment variables,
// `config show` and the writer, so a key is added in one place.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/settings.hpp"

namespace xlaunch::config {

/// How a key's value is written back to YAML (so ints stay ints and bools stay bools).
enum class ValueKind { Text, Integer, Number, Boolean, Choice };

/// One known key.
struct KeySpec {
  std::string_view name;  ///< the YAML key, e.g. "num_processes"
  ValueKind kind;
  std::string_view allowed;  ///< what is allowed, for error messages: "an integer >= 1"
  std::string_view help;     ///< one line for docs and `config show`
  /// Parses `text` into `into`. Returns false (leaving `into` alone) when the text is not
  /// allowed, with `notice` saying why when `allowed` alone would not. May set `notice` when
  /// it accepted the value but the user should know something (e.g. accelerate's FSDP
  /// launched as MULTI_GPU).
  std::function<bool(std::string_view text, Settings& into, std::string& notice)> parse;
  /// The value as text, or nullopt when `from` leaves this key unset.
  std::function<std::optional<std::string>(const Settings& from)> print;
};

/// Every key, in the order files are written (accelerate's keys first).
const std::vector<KeySpec>& schema();

/// ": why" when a refused value's `notice` says why, else "" (for "bad value 'v'{}").
inline std::string refusal_reason(const std::string& notice) {
  return notice.empty() ? std::string() : ": " + notice;
}

/// The spec of `name`, or nullptr when xlaunch does not know the key.
const KeySpec* find_key(std::string_view name);

/// accelerate keys xlaunch accepts and ignores. `reason` says why they have no effect.
struct IgnoredKey {
  std::string_view name;
  std::string_view reason;         ///< "xlaunch does not run DeepSpeed"
  std::string_view inert_value{};  ///< a value that means "not used" besides empty/false/null
};

/// The accelerate key `name` (exact, or a tpu_* key), or nullptr.
const IgnoredKey* find_ignored_key(std::string_view name);

/// The known key closest to `unknown` by edit distance, when it is close enough to be a typo.
std::optional<std::string> suggest_key(std::string_view unknown);

/// Levenshtein distance, case-sensitive.
std::size_t edit_distance(std::string_view a, std::string_view b);

/// "num_processes" -> "XLAUNCH_NUM_PROCESSES".
std::string env_var_name(std::string_view key);

/// Strict scalar parsers shared by the YAML, environment and flag paths: the whole text must
/// match (surrounding blanks allowed).
std::optional<long long> parse_integer(std::string_view text);
std::optional<double> parse_number(std::string_view text);
/// true/false, yes/no, on/off, y/n, 1/0, case-insensitively.
std::optional<bool> parse_boolean(std::string_view text);

/// A run id names folders (LOG_DIR/<id>, $TMPDIR/xlaunch-<id>-*) and store keys, so it is a
/// plain name: 1..kMaxRunIdLength letters, digits, '.', '_' or '-', starting with a letter or
/// digit (no "..", "/", blanks, control characters or leading '-').
inline constexpr std::size_t kMaxRunIdLength = 128;
bool is_valid_run_id(std::string_view text);

/// The longest duration setting (term_timeout, rdzv_timeout, heartbeat_timeout) accepted:
/// 1,000,000 s (11.6 days). Longer ones overflow the clocks they are added to.
inline constexpr double kMaxSeconds = 1e6;

/// "all", or comma-separated non-negative GPU indexes ("0", "1,3", "0, 2"). Normalised
/// without blanks; nullopt when malformed.
std::optional<std::string> normalize_gpu_ids(std::string_view text);

}  // namespace xlaunch::config
