#include "cluster/record_codec.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <map>
#include <set>

#include "config/schema.hpp"
#include "config/text.hpp"

namespace xlaunch::cluster {

using config::split;

namespace {

using Fields = std::map<std::string, std::string, std::less<>>;

bool is_control(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u < 0x20 || u == 0x7f;
}

// "key=value" lines; an empty line is allowed (the last one), anything else is malformed.
Fields parse_fields(std::string_view text, std::string_view key) {
  Fields fields;
  for (std::string_view line : split(text, '\n')) {
    if (line.empty()) continue;
    const auto eq = line.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      throw MalformedRecord(
          key, fmt::format("a line that is not NAME=VALUE: '{}'", flat(line.substr(0, 80))));
    }
    auto [at, fresh] = fields.emplace(line.substr(0, eq), line.substr(eq + 1));
    if (!fresh) throw MalformedRecord(key, fmt::format("'{}' given twice", at->first));
  }
  return fields;
}

std::int64_t number(std::string_view text, std::int64_t min, std::int64_t max,
                    std::string_view what, std::string_view key) {
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    throw MalformedRecord(key,
                          fmt::format("{}='{}' is not a number", what, flat(text.substr(0, 40))));
  }
  if (value < min || value > max) {
    throw MalformedRecord(key, fmt::format("{}={} is outside {}..{}", what, value, min, max));
  }
  return value;
}

int int_field(const Fields& fields, const char* name, std::int64_t min, std::int64_t max,
              std::string_view key) {
  auto it = fields.find(name);
  if (it == fields.end()) throw MalformedRecord(key, fmt::format("no '{}'", name));
  return static_cast<int>(number(it->second, min, max, name, key));
}

// A text of a record: printable (newlines only where `lines`), at most `max` bytes.
std::string text_value(std::string_view text, std::size_t max, bool lines, std::string_view what,
                       std::string_view key) {
  if (text.size() > max) {
    throw MalformedRecord(key,
                          fmt::format("{} is {} bytes long, more than {}", what, text.size(), max));
  }
  if (std::any_of(text.begin(), text.end(),
                  [&](char c) { return is_control(c) && !(lines && c == '\n'); })) {
    throw MalformedRecord(key, fmt::format("{} holds control characters", what));
  }
  return std::string(text);
}

std::string text_field(const Fields& fields, const char* name, std::size_t max,
                       std::string_view key) {
  auto it = fields.find(name);
  if (it == fields.end()) throw MalformedRecord(key, fmt::format("no '{}'", name));
  return text_value(it->second, max, false, name, key);
}

std::vector<int> counts(std::string_view list, std::int64_t min, std::int64_t max,
                        std::string_view what, std::string_view key) {
  std::vector<int> out;
  if (list.empty()) return out;
  for (std::string_view item : split(list, ',')) {
    if (out.size() >= static_cast<std::size_t>(kMaxMachines)) {
      throw MalformedRecord(key, fmt::format("more than {} {}", kMaxMachines, what));
    }
    out.push_back(static_cast<int>(number(item, min, max, what, key)));
  }
  return out;
}

}  // namespace

MalformedRecord::MalformedRecord(std::string_view key, std::string_view problem)
    : std::invalid_argument(fmt::format("malformed record {}: {}", key, problem)),
      key_(key),
      problem_(problem) {}

std::string flat(std::string_view text) {
  std::string out(text);
  std::replace_if(out.begin(), out.end(), is_control, ' ');
  return out;
}

std::string encode(const JoinRecord& r) {
  return fmt::format("machine={}\nhost={}\npid={}\nlocal={}\nversion={}\n{}", r.machine_rank,
                     flat(r.host), r.pid, r.local_processes, flat(r.version), r.settings);
}

JoinRecord decode_join(std::string_view text, std::string_view key) {
  Fields fields = parse_fields(text, key);
  JoinRecord r;
  r.machine_rank = int_field(fields, "machine", -1, kMaxMachines - 1, key);
  r.host = text_field(fields, "host", kMaxNameBytes, key);
  r.pid = int_field(fields, "pid", 0, std::numeric_limits<int>::max(), key);
  r.local_processes = int_field(fields, "local", 1, kMaxLocalProcesses, key);
  r.version = text_field(fields, "version", kMaxNameBytes, key);
  for (const char* fixed : {"machine", "host", "pid", "local", "version"}) fields.erase(fixed);
  for (const auto& [name, value] : fields) {
    if (!name.starts_with("s."))
      throw MalformedRecord(key, fmt::format("unknown line '{}'", flat(name)));
    text_value(name, kMaxNameBytes, false, "a setting's name", key);
    r.settings += name + "=" + text_value(value, kMaxNameBytes, false, name, key) + "\n";
  }
  return r;
}

std::string encode_layout(const std::variant<Layout, JoinProblem>& decision) {
  if (const auto* layout = std::get_if<Layout>(&decision)) {
    return fmt::format("ok\n{}\n{}\n{}", fmt::join(layout->local_processes, ","),
                       flat(layout->run_id), fmt::join(layout->slots, ","));
  }
  const auto& problem = std::get<JoinProblem>(decision);
  std::string message = problem.message;
  std::replace_if(
      message.begin(), message.end(), [](char c) { return is_control(c) && c != '\n'; }, ' ');
  return fmt::format("error\n{}\n{}", problem.exit_code, message);
}

std::variant<Layout, JoinProblem> decode_layout(std::string_view text, std::string_view key) {
  const auto nl = text.find('\n');
  const std::string_view head = text.substr(0, nl);
  const std::string_view rest = nl == std::string_view::npos ? "" : text.substr(nl + 1);
  if (head == "error") {
    const auto nl2 = rest.find('\n');
    if (nl2 == std::string_view::npos) throw MalformedRecord(key, "an error without its message");
    JoinProblem problem;
    problem.exit_code = static_cast<int>(number(rest.substr(0, nl2), 1, 255, "exit code", key));
    problem.message = text_value(rest.substr(nl2 + 1), kMaxTextBytes, true, "the message", key);
    return problem;
  }
  if (head != "ok") throw MalformedRecord(key, "neither 'ok' nor 'error'");
  const std::vector<std::string_view> lines = split(rest, '\n');
  if (lines.size() < 2 || lines.size() > 3)
    throw MalformedRecord(key, "not 2 or 3 lines after 'ok'");
  Layout layout;
  layout.local_processes = counts(lines[0], 1, kMaxLocalProcesses, "local counts", key);
  if (layout.local_processes.empty()) throw MalformedRecord(key, "no machines");
  std::int64_t world = 0;
  for (int n : layout.local_processes) world += n;  // at most 2^16 * 2^10: no overflow
  if (world > std::numeric_limits<int>::max()) throw MalformedRecord(key, "a world size past 2^31");
  if (!config::is_valid_run_id(lines[1])) {
    throw MalformedRecord(key, fmt::format("'{}' is not a run id", flat(lines[1].substr(0, 140))));
  }
  layout.run_id = std::string(lines[1]);
  if (lines.size() == 3) {
    layout.slots = counts(lines[2], 0, kMaxArrivals, "arrival slots", key);
    if (!layout.slots.empty() && layout.slots.size() != layout.local_processes.size()) {
      throw MalformedRecord(key, "a different number of arrival slots and machines");
    }
    if (std::set<int>(layout.slots.begin(), layout.slots.end()).size() != layout.slots.size()) {
      throw MalformedRecord(key, "an arrival slot given twice");
    }
  }
  return layout;
}

std::string encode(const FailureRecord& r) {
  return fmt::format("machine={}\nhost={}\nrank={}\nexit_code={}\nrestartable={}\ncause={}\n",
                     r.machine_rank, flat(r.host), r.rank, r.exit_code, r.restartable ? 1 : 0,
                     flat(r.cause));
}

FailureRecord decode_failure(std::string_view text, std::string_view key) {
  const Fields fields = parse_fields(text, key);
  if (fields.size() != 6) throw MalformedRecord(key, "not the 6 lines of a failure record");
  FailureRecord r;
  r.machine_rank = int_field(fields, "machine", -1, kMaxMachines - 1, key);
  r.host = text_field(fields, "host", kMaxNameBytes, key);
  r.rank = int_field(fields, "rank", -1, std::numeric_limits<int>::max(), key);
  r.exit_code = int_field(fields, "exit_code", 0, 255, key);
  r.restartable = int_field(fields, "restartable", 0, 1, key) == 1;
  r.cause = text_field(fields, "cause", kMaxTextBytes, key);
  return r;
}

std::string encode_verdict(const std::optional<FailureRecord>& failure) {
  return failure ? encode(*failure) : "ok";
}

std::optional<FailureRecord> decode_verdict(std::string_view verdict, std::string_view key) {
  if (verdict == "ok") return std::nullopt;
  return decode_failure(verdict, key);
}

std::int64_t decode_count(std::string_view text, std::int64_t min, std::int64_t max,
                          std::string_view key) {
  return number(text, min, max, "the value", key);
}

std::string decode_name(std::string_view text, std::string_view key) {
  return text_value(text, kMaxNameBytes, false, "a name", key);
}

std::string decode_message(std::string_view text, std::string_view key) {
  return text_value(text, kMaxTextBytes, true, "the message", key);
}

void check_fixed_layout(const Layout& layout, int num_machines, std::string_view key) {
  if (static_cast<int>(layout.local_processes.size()) != num_machines || !layout.slots.empty()) {
    throw MalformedRecord(key, fmt::format("a layout of {} machines for a {}-machine job",
                                           layout.local_processes.size(), num_machines));
  }
}

void check_elastic_layout(const Layout& layout, int max_machines, std::string_view key) {
  const auto n = static_cast<int>(layout.local_processes.size());
  if (n < 1 || n > max_machines || layout.slots.size() != layout.local_processes.size()) {
    throw MalformedRecord(key, fmt::format("a round of {} machines ({} arrival slots) for a job of "
                                           "at most {}",
                                           n, layout.slots.size(), max_machines));
  }
}

std::vector<std::string> hosts_by_rank(const Layout& layout, const std::vector<JoinRecord>& records,
                                       const std::vector<std::string>& keys) {
  const auto n = static_cast<int>(layout.local_processes.size());
  std::vector<std::string> hosts(layout.local_processes.size());
  std::vector<bool> seen(layout.local_processes.size(), false);
  for (std::size_t i = 0; i < records.size(); ++i) {
    const JoinRecord& r = records[i];
    const std::string_view key = i < keys.size() ? std::string_view(keys[i]) : "";
    if (r.machine_rank < 0 || r.machine_rank >= n || seen[r.machine_rank]) {
      throw MalformedRecord(key, fmt::format("machine rank {} does not fit the {}-machine layout",
                                             r.machine_rank, n));
    }
    if (layout.local_processes[r.machine_rank] != r.local_processes) {
      throw MalformedRecord(
          key, fmt::format("local count {}, but the layout gives machine {} {}", r.local_processes,
                           r.machine_rank, layout.local_processes[r.machine_rank]));
    }
    seen[r.machine_rank] = true;
    hosts[r.machine_rank] = r.host;
  }
  return hosts;
}

FailureRecord malformed_failure(const MalformedRecord& e, std::string_view run_id) {
  FailureRecord r;
  r.machine_rank = -1;
  r.rank = -1;
  r.exit_code = 1;
  r.restartable = false;
  r.cause = fmt::format("{}; is another program using run id '{}'?", e.what(), run_id);
  return r;
}

FailureRecord failure_at(std::string_view text, std::string_view key, std::string_view run_id) {
  try {
    return decode_failure(text, key);
  } catch (const MalformedRecord& e) {
    return malformed_failure(e, run_id);
  }
}

}  // namespace xlaunch::cluster
