#include "config/validate.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <map>

#include "config/accelerate_keys.hpp"
#include "config/schema.hpp"
#include "config/text.hpp"
#include "config/usage_error.hpp"

namespace xlaunch::config {

std::string where(const std::string& origin, const YAML::Mark& mark) {
  if (mark.is_null()) return origin;
  // yaml-cpp counts from 0; editors count from 1.
  return fmt::format("{}:{}:{}", origin, mark.line + 1, mark.column + 1);
}

/// The value as the user wrote it, for messages: scalars verbatim, the rest in flow style.
std::string shown(const YAML::Node& node) {
  if (node.IsScalar()) return printable(node.Scalar());
  YAML::Emitter out;
  out << YAML::Flow << node;
  return printable(std::string(out.c_str(), out.size()));
}

namespace {

/// Whether an ignored accelerate key's value leaves behaviour unchanged ({} , null, false...).
bool inert(const YAML::Node& value, std::string_view inert_value) {
  if (!value.IsDefined() || value.IsNull()) return true;
  if (value.IsMap() || value.IsSequence()) return value.size() == 0;
  const std::string& text = value.Scalar();
  if (text.empty() || parse_boolean(text) == false) return true;
  return !inert_value.empty() && text == inert_value;
}

/// gpu_ids may be a YAML list ([0, 1]); the schema wants "0,1".
std::optional<std::string> joined_scalars(const YAML::Node& list) {
  std::string out;
  for (const YAML::Node& item : list) {
    if (!item.IsScalar()) return std::nullopt;
    if (!out.empty()) out += ',';
    out += item.Scalar();
  }
  return out;
}

}  // namespace

std::string printable(std::string_view text) {
  // A message naming a 10 MB value would itself be dropped by the console: its start is
  // enough to recognise it.
  constexpr std::size_t kShown = 200;
  std::string out;
  for (char c : text.substr(0, text.size() > kShown + 56 ? kShown : text.size())) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\0') {
      out += "\\0";
    } else if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += c;
    }
  }
  if (text.size() > kShown + 56) out += fmt::format("... ({} bytes in all)", text.size());
  return out;
}

void throw_if_problems(std::string_view title, const std::vector<std::string>& problems,
                       std::string_view hint) {
  if (problems.empty()) return;
  std::string message =
      fmt::format("{} ({} problem{}):", title, problems.size(), problems.size() == 1 ? "" : "s");
  for (const std::string& problem : problems) message += "\n" + problem;
  throw UsageError(message, std::string(hint));
}

namespace {

/// What one pass over a document's keys collects.
struct Reading {
  const YAML::Node& root;
  const std::string& origin;
  LoadedConfig& out;
  std::vector<std::string> problems;
  std::map<std::string, YAML::Mark> seen;
  std::map<std::string, YAML::Mark> value_marks;
  std::optional<bool> legacy_fp16;
};

// "010", "-07": digits after a leading 0, which YAML 1.1 reads as an octal number.
bool yaml11_octal(std::string_view text) {
  if (!text.empty() && (text.front() == '+' || text.front() == '-')) text.remove_prefix(1);
  if (text.size() < 2 || text.front() != '0') return false;
  return std::all_of(text.begin() + 1, text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

void read_schema_key(Reading& r, const KeySpec& spec, const std::string& key,
                     const YAML::Node& value, const YAML::Mark& value_mark) {
  if (value.IsNull()) return;  // accelerate writes `main_process_ip: null` for "unset"
  std::optional<std::string> text;
  if (value.IsScalar()) {
    text = value.Scalar();
  } else if (key == "gpu_ids" && value.IsSequence()) {
    text = joined_scalars(value);
  }
  if (text && text->empty()) return;
  // -1 is accelerate's ClusterConfig default, which it writes for "not given": in a file
  // (not a flag or a variable) it leaves the count to the command line, as in accelerate.
  if (key == "num_processes" && text && trim(*text) == "-1") {
    r.out.notices.push_back(
        fmt::format("{}: num_processes -1 is accelerate's 'not given': the count comes from "
                    "--num_processes or --nproc_per_node, as if the file gave none",
                    where(r.origin, value_mark)));
    return;
  }
  // An unquoted 010 is 8 to accelerate's PyYAML (YAML 1.1 octal) and 10 to xlaunch's
  // yaml-cpp: a number the two would launch differently is refused, not guessed.
  if (text && value.IsScalar() && value.Tag() == "?" && yaml11_octal(*text)) {
    r.problems.push_back(fmt::format(
        "{}: key '{}': bad value '{}': accelerate reads a number with a leading 0 as octal "
        "(YAML 1.1); write it without the 0, or quote it",
        where(r.origin, value_mark), key, *text));
    return;
  }
  std::string notice;
  if (!text || !spec.parse(*text, r.out.settings, notice)) {
    r.problems.push_back(fmt::format("{}: key '{}': bad value '{}'{} (allowed: {})",
                                     where(r.origin, value_mark), key, shown(value),
                                     refusal_reason(notice), spec.allowed));
    return;
  }
  r.value_marks[key] = value_mark;
  r.out.places[key] = where(r.origin, value_mark);
  if (!notice.empty()) r.out.notices.push_back(where(r.origin, value_mark) + ": " + notice);
}

void read_entry(Reading& r, const YAML::Node& key_node, const YAML::Node& value) {
  const std::string& origin = r.origin;
  if (!key_node.IsScalar()) {
    r.problems.push_back(fmt::format("{}: keys must be plain names, not '{}'",
                                     where(origin, key_node.Mark()), shown(key_node)));
    return;
  }
  const std::string key = key_node.Scalar();
  const YAML::Mark value_mark = value.Mark().is_null() ? key_node.Mark() : value.Mark();
  if (auto [it, fresh] = r.seen.emplace(key, key_node.Mark()); !fresh) {
    r.out.notices.push_back(
        fmt::format("{}: key '{}' appears again (first at line {}); the last "
                    "one wins",
                    where(origin, key_node.Mark()), key, it->second.line + 1));
  }

  if (const KeySpec* spec = find_key(key)) {
    read_schema_key(r, *spec, key, value, value_mark);
  } else if (is_accelerate_config_key(key)) {
    read_accelerate_key(key, value, r.root, origin, r.out.settings.accelerate, r.problems,
                        r.out.notices);
  } else if (const IgnoredKey* ignored = find_ignored_key(key)) {
    if (key == "fp16") r.legacy_fp16 = value.IsScalar() && parse_boolean(value.Scalar()) == true;
    if (key != "fp16" && !inert(value, ignored->inert_value)) {
      r.out.notices.push_back(fmt::format("{}: ignoring {} ({})", where(origin, key_node.Mark()),
                                          key, ignored->reason));
    }
  } else if (auto suggestion = suggest_key(key)) {
    // accelerate refuses unknown keys too: a typo must not silently drop a setting.
    r.problems.push_back(fmt::format("{}: unknown key '{}' (did you mean '{}'?)",
                                     where(origin, key_node.Mark()), key, *suggestion));
  } else {
    r.problems.push_back(fmt::format("{}: unknown key '{}'", where(origin, key_node.Mark()), key));
  }
}

// Checks across keys, reported at the key that has to change.
void check_across_keys(Reading& r) {
  const Settings& s = r.out.settings;
  if (s.machine_rank && s.num_machines && *s.machine_rank >= *s.num_machines) {
    r.problems.push_back(fmt::format(
        "{}: key 'machine_rank': bad value '{}' (allowed: 0..{}, below num_machines {})",
        where(r.origin, r.value_marks["machine_rank"]), *s.machine_rank, *s.num_machines - 1,
        *s.num_machines));
  }
  if (s.num_processes && s.num_machines && *s.num_processes % *s.num_machines != 0) {
    r.problems.push_back(fmt::format(
        "{}: key 'num_processes': bad value '{}' (allowed: a multiple of num_machines {}, "
        "since every machine runs the same number of processes)",
        where(r.origin, r.value_marks["num_processes"]), *s.num_processes, *s.num_machines));
  }
}

}  // namespace

LoadedConfig validate_document(const YAML::Node& root, const std::string& origin) {
  LoadedConfig out;
  if (!root.IsDefined() || root.IsNull()) return out;
  Reading r{root, origin, out, {}, {}, {}, std::nullopt};
  if (!root.IsMap()) {
    r.problems.push_back(fmt::format("{}: the file must map keys to values (key: value per line)",
                                     where(origin, root.Mark())));
    throw_if_problems("invalid config file " + origin, r.problems, "see docs/config.md");
  }
  for (const auto& entry : root) read_entry(r, entry.first, entry.second);

  // accelerate's old files say `fp16: true` instead of mixed_precision; it converts them too.
  if (r.legacy_fp16 == true && !out.settings.mixed_precision) {
    out.settings.mixed_precision = MixedPrecision::Fp16;
    out.notices.push_back(where(origin, r.seen["fp16"]) +
                          ": reading accelerate's old 'fp16: true' as 'mixed_precision: fp16'");
  }
  check_across_keys(r);
  throw_if_problems("invalid config file " + origin, r.problems,
                    "every key and its allowed values are listed in docs/config.md");
  return out;
}

}  // namespace xlaunch::config
