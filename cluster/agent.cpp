#include "cluster/agent.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "cluster/record_codec.hpp"
#include "cluster/seconds.hpp"
#include "config/text.hpp"

namespace xlaunch::cluster {

using config::split;

namespace {

// The agreed settings, "s.NAME=VALUE" lines, by name.
std::map<std::string, std::string> settings_map(std::string_view text) {
  std::map<std::string, std::string> out;
  for (std::string_view line : split(text, '\n')) {
    const auto eq = line.find('=');
    if (eq != std::string_view::npos) out[std::string(line.substr(0, eq))] = line.substr(eq + 1);
  }
  return out;
}

std::string who(const JoinRecord& r) {
  return fmt::format("machine {} ({}, pid {})", r.machine_rank, r.host, r.pid);
}

}  // namespace

std::string agreed_settings(const std::vector<std::pair<std::string, std::string>>& values) {
  std::map<std::string, std::string> sorted;
  for (const auto& [k, v] : values) sorted["s." + k] = flat(v);
  std::string out;
  for (const auto& [k, v] : sorted) out += k + "=" + v + "\n";
  return out;
}

// Sums in 64 bits: decoded layouts are bounded (record_codec.hpp), so they fit an int.
int Layout::world_size() const {
  std::int64_t total = 0;
  for (int n : local_processes) total += n;
  return static_cast<int>(total);
}

int Layout::rank_offset(int machine_rank) const {
  std::int64_t offset = 0;
  for (int m = 0; m < machine_rank; ++m) offset += local_processes.at(m);
  return static_cast<int>(offset);
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
  auto reference = settings_map(first.settings);
  for (const auto& [rank, r] : by_rank) {
    auto mine = settings_map(r->settings);
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

namespace {
// At most `most` of `numbers`, then how many more: a report travels as a store record of
// limited size.
std::string first_of(const std::vector<int>& numbers, std::size_t most) {
  if (numbers.size() <= most) return fmt::format("{}", fmt::join(numbers, ", "));
  return fmt::format("{}, and {} more", fmt::join(numbers.begin(), numbers.begin() + most, ", "),
                     numbers.size() - most);
}
}  // namespace

JoinProblem missing_machines(const std::vector<JoinRecord>& arrived, int num_machines,
                             std::chrono::milliseconds timeout,
                             const std::vector<int>& unwritten_slots) {
  constexpr std::size_t kMostNamed = 16;
  std::vector<JoinRecord> ranked = arrived;
  assign_unclaimed_ranks(ranked, num_machines);
  std::set<int> present;
  std::vector<std::string> joined;
  std::sort(ranked.begin(), ranked.end(), [](const JoinRecord& a, const JoinRecord& b) {
    return a.machine_rank < b.machine_rank;
  });
  // Bounded: the records after an empty slot may be anyone's.
  for (const JoinRecord& r : ranked) {
    if (present.insert(r.machine_rank).second && joined.size() < kMostNamed)
      joined.push_back(fmt::format("{} ({})", r.machine_rank, r.host));
  }
  if (present.size() > joined.size())
    joined.push_back(fmt::format("and {} more", present.size() - joined.size()));
  std::vector<int> missing;
  for (int m = 0; m < num_machines; ++m) {
    if (!present.contains(m)) missing.push_back(m);
  }
  if (!unwritten_slots.empty()) {
    // Machine 0 reads the slots in order: one taken and never written holds the job up
    // however many machines came after it.
    return JoinProblem{
        1, fmt::format(
               "arrival slot{} {} of the join {} taken but never written within "
               "--rdzv_timeout {:g}s (a launcher killed or stalled while it joined, or a "
               "client other than xlaunch on the store), so the job could not form "
               "(joined: {}{}); start every launcher again",
               unwritten_slots.size() == 1 ? "" : "s", first_of(unwritten_slots, kMostNamed),
               unwritten_slots.size() == 1 ? "was" : "were", seconds(timeout),
               joined.empty() ? "none" : fmt::format("{}", fmt::join(joined, ", ")),
               missing.empty() ? "" : fmt::format("; missing: {}", first_of(missing, kMostNamed)))};
  }
  return JoinProblem{
      1,
      fmt::format("machine rank{} {} did not join within --rdzv_timeout {:g}s (joined: {}); "
                  "start xlaunch on every machine with the same --main_process_ip/port, or "
                  "raise --rdzv_timeout",
                  missing.size() == 1 ? "" : "s", first_of(missing, kMostNamed), seconds(timeout),
                  joined.empty() ? "none" : fmt::format("{}", fmt::join(joined, ", ")))};
}

}  // namespace xlaunch::cluster
