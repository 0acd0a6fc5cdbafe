#include "cluster/agent.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "cluster/seconds.hpp"
#include "config/text.hpp"

namespace xlaunch::cluster {

using config::parse_int;
using config::split;

namespace {

// Records are "key=value" lines; values never hold a newline (they are flattened).
std::string flat(std::string_view text) {
  std::string out(text);
  std::replace(out.begin(), out.end(), '\n', ' ');
  return out;
}

std::map<std::string, std::string> parse_lines(std::string_view text) {
  std::map<std::string, std::string> fields;
  for (std::string_view line : split(text, '\n')) {
    auto eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    fields[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
  }
  return fields;
}

int int_field(const std::map<std::string, std::string>& fields, const char* name) {
  int value = 0;
  auto it = fields.find(name);
  if (it == fields.end() || !parse_int(it->second, value)) {
    throw std::invalid_argument(fmt::format("record field '{}' is missing or not a number", name));
  }
  return value;
}

std::string field(const std::map<std::string, std::string>& fields, const char* name) {
  auto it = fields.find(name);
  return it == fields.end() ? std::string() : it->second;
}

std::string who(const JoinRecord& r) {
  return fmt::format("machine {} ({}, pid {})", r.machine_rank, r.host, r.pid);
}

}  // namespace

std::string encode(const JoinRecord& r) {
  return fmt::format("machine={}\nhost={}\npid={}\nlocal={}\nversion={}\n{}", r.machine_rank,
                     flat(r.host), r.pid, r.local_processes, flat(r.version), r.settings);
}

JoinRecord decode_join(std::string_view text) {
  auto fields = parse_lines(text);
  JoinRecord r;
  r.machine_rank = int_field(fields, "machine");
  r.host = field(fields, "host");
  r.pid = int_field(fields, "pid");
  r.local_processes = int_field(fields, "local");
  r.version = field(fields, "version");
  for (const char* fixed : {"machine", "host", "pid", "local", "version"}) fields.erase(fixed);
  for (const auto& [k, v] : fields) r.settings += k + "=" + v + "\n";
  return r;
}

std::string agreed_settings(const std::vector<std::pair<std::string, std::string>>& values) {
  std::map<std::string, std::string> sorted;
  for (const auto& [k, v] : values) sorted["s." + k] = flat(v);
  std::string out;
  for (const auto& [k, v] : sorted) out += k + "=" + v + "\n";
  return out;
}

int Layout::world_size() const {
  int total = 0;
  for (int n : local_processes) total += n;
  return total;
}

int Layout::rank_offset(int machine_rank) const {
  int offset = 0;
  for (int m = 0; m < machine_rank; ++m) offset += local_processes.at(m);
  return offset;
}

std::variant<Layout, JoinProblem> decide_layout(const std::vector<JoinRecord>& arrivals,
                                                int num_machines,
                                                std::optional<int> total_processes) {
  std::vector<std::string> problems;
  std::map<int, const JoinRecord*> by_rank;
  for (const JoinRecord& r : arrivals) {
    if (r.machine_rank < 0 || r.machine_rank >= num_machines) {
      problems.push_back(fmt::format("{} has machine rank {}, outside 0..{}", who(r),
                                     r.machine_rank, num_machines - 1));
      continue;
    }
    auto [it, fresh] = by_rank.emplace(r.machine_rank, &r);
    if (!fresh) {
      problems.push_back(fmt::format(
          "machine rank {} was given to two launchers: {} (pid {}) and {} (pid {}); give each "
          "machine its own --machine_rank from 0 to {}",
          r.machine_rank, it->second->host, it->second->pid, r.host, r.pid, num_machines - 1));
    }
  }
  if (!problems.empty() || static_cast<int>(by_rank.size()) != num_machines) {
    if (problems.empty()) problems.push_back("not every machine rank arrived");
    return JoinProblem{
        2, fmt::format("the machines cannot form one job:\n  {}", fmt::join(problems, "\n  "))};
  }

  const JoinRecord& first = *by_rank.at(0);
  for (const auto& [rank, r] : by_rank) {
    if (r->version != first.version) {
      problems.push_back(fmt::format(
          "xlaunch versions differ: machine 0 ({}) runs {}, machine {} ({}) runs {}; install "
          "the same version everywhere",
          first.host, first.version, rank, r->host, r->version));
    }
  }
  auto reference = parse_lines(first.settings);
  for (const auto& [rank, r] : by_rank) {
    auto mine = parse_lines(r->settings);
    std::set<std::string> keys;
    for (const auto& kv : reference) keys.insert(kv.first);
    for (const auto& kv : mine) keys.insert(kv.first);
    for (const std::string& k : keys) {
      std::string a = reference.contains(k) ? reference[k] : "(unset)";
      std::string b = mine.contains(k) ? mine[k] : "(unset)";
      if (a != b) {
        problems.push_back(fmt::format("{}: machine 0 ({}) has {}, machine {} ({}) has {}",
                                       k.substr(2), first.host, a, rank, r->host, b));
      }
    }
  }
  Layout layout;
  for (const auto& [rank, r] : by_rank) layout.local_processes.push_back(r->local_processes);
  if (problems.empty() && total_processes && layout.world_size() != *total_processes) {
    std::vector<std::string> counts;
    for (const auto& [rank, r] : by_rank)
      counts.push_back(fmt::format("{}: {}", rank, r->local_processes));
    problems.push_back(
        fmt::format("--num_processes {} but the machines' local counts add up to {} (machine {})",
                    *total_processes, layout.world_size(), fmt::join(counts, ", ")));
  }
  if (!problems.empty()) {
    return JoinProblem{2, fmt::format("the machines disagree (give every machine the same "
                                      "flags and config file, and the same xlaunch):\n  {}",
                                      fmt::join(problems, "\n  "))};
  }
  return layout;
}

void assign_unclaimed_ranks(std::vector<JoinRecord>& arrivals, int num_machines) {
  std::set<int> claimed;
  for (const JoinRecord& r : arrivals) claimed.insert(r.machine_rank);
  int next = 0;
  for (JoinRecord& r : arrivals) {
    if (r.machine_rank >= 0) continue;
    while (next < num_machines && claimed.contains(next)) ++next;
    if (next == num_machines) break;  // more arrivals than ranks: decide_layout says so
    r.machine_rank = next++;
  }
}

JoinProblem missing_machines(const std::vector<JoinRecord>& arrived, int num_machines,
                             std::chrono::milliseconds timeout) {
  std::vector<JoinRecord> ranked = arrived;
  assign_unclaimed_ranks(ranked, num_machines);
  std::set<int> present;
  std::vector<std::string> joined;
  std::sort(ranked.begin(), ranked.end(), [](const JoinRecord& a, const JoinRecord& b) {
    return a.machine_rank < b.machine_rank;
  });
  for (const JoinRecord& r : ranked) {
    present.insert(r.machine_rank);
    joined.push_back(fmt::format("{} ({})", r.machine_rank, r.host));
  }
  std::vector<int> missing;
  for (int m = 0; m < num_machines; ++m) {
    if (!present.contains(m)) missing.push_back(m);
  }
  return JoinProblem{
      1, fmt::format("machine rank{} {} did not join within --rdzv_timeout {:g}s (joined: {}); "
                     "start xlaunch on every machine with the same --main_process_ip/port, or "
                     "raise --rdzv_timeout",
                     missing.size() == 1 ? "" : "s", fmt::join(missing, ", "), seconds(timeout),
                     joined.empty() ? "none" : fmt::format("{}", fmt::join(joined, ", ")))};
}

std::string encode_layout(const std::variant<Layout, JoinProblem>& decision) {
  if (const auto* layout = std::get_if<Layout>(&decision)) {
    return fmt::format("ok\n{}\n{}\n{}", fmt::join(layout->local_processes, ","),
                       flat(layout->run_id), fmt::join(layout->slots, ","));
  }
  const auto& problem = std::get<JoinProblem>(decision);
  return fmt::format("error\n{}\n{}", problem.exit_code, problem.message);
}

std::variant<Layout, JoinProblem> decode_layout(std::string_view text) {
  auto nl = text.find('\n');
  std::string_view head = text.substr(0, nl);
  std::string_view rest = nl == std::string_view::npos ? "" : text.substr(nl + 1);
  if (head == "ok") {
    Layout layout;
    std::vector<std::string_view> lines = split(rest, '\n');
    auto numbers = [](std::string_view list, std::vector<int>& into) {
      if (list.empty()) return;
      for (std::string_view item : split(list, ',')) {
        int n = 0;
        if (!parse_int(item, n)) throw std::invalid_argument("bad layout");
        into.push_back(n);
      }
    };
    if (lines.empty()) throw std::invalid_argument("bad layout");
    numbers(lines[0], layout.local_processes);
    if (lines.size() > 1) layout.run_id = std::string(lines[1]);
    if (lines.size() > 2) numbers(lines[2], layout.slots);
    return layout;
  }
  JoinProblem problem;
  auto nl2 = rest.find('\n');
  if (head != "error" || nl2 == std::string_view::npos ||
      !parse_int(rest.substr(0, nl2), problem.exit_code)) {
    throw std::invalid_argument("bad layout");
  }
  problem.message = std::string(rest.substr(nl2 + 1));
  return problem;
}

std::string encode(const FailureRecord& r) {
  return fmt::format("machine={}\nhost={}\nrank={}\nexit_code={}\nrestartable={}\ncause={}\n",
                     r.machine_rank, flat(r.host), r.rank, r.exit_code, r.restartable ? 1 : 0,
                     flat(r.cause));
}

FailureRecord decode_failure(std::string_view text) {
  auto fields = parse_lines(text);
  FailureRecord r;
  r.machine_rank = int_field(fields, "machine");
  r.host = field(fields, "host");
  r.rank = int_field(fields, "rank");
  r.exit_code = int_field(fields, "exit_code");
  r.restartable = field(fields, "restartable") == "1";
  r.cause = field(fields, "cause");
  return r;
}

}  // namespace xlaunch::cluster
