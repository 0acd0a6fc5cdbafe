#include "cluster/etcd_layout.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <set>

#include "cluster/membership.hpp"
#include "cluster/seconds.hpp"
#include "config/schema.hpp"

namespace xlaunch::cluster::etcd {

std::string job_key(std::string_view run_id, std::string_view suffix) {
  return fmt::format("/xlaunch/{}/{}", run_id, suffix);
}

std::string member_key(std::string_view run_id, std::int64_t lease) {
  return job_key(run_id, fmt::format("members/{:x}", lease));
}

std::string round_key(std::string_view run_id, int round, std::string_view suffix) {
  return job_key(run_id, fmt::format("round/{}/{}", round, suffix));
}

std::optional<std::int64_t> lease_of_member_key(std::string_view run_id, std::string_view key) {
  const std::string prefix = job_key(run_id, "members/");
  if (!key.starts_with(prefix) || key.size() == prefix.size()) return std::nullopt;
  auto hex = key.substr(prefix.size());
  std::int64_t lease = 0;
  auto [end, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), lease, 16);
  if (ec != std::errc() || end != hex.data() + hex.size() || lease <= 0) return std::nullopt;
  return lease;
}

std::string encode_member(const JoinRecord& record, std::string_view job_run_id, int store_port) {
  std::string run(job_run_id);
  std::replace(run.begin(), run.end(), '\n', ' ');
  return fmt::format("job_run_id={}\nstore_port={}\n{}", run, store_port, cluster::encode(record));
}

void decode_member(std::string_view text, std::string_view key, Member& into) {
  auto line = [&](std::string_view head) {
    auto nl = text.find('\n');
    if (!text.starts_with(head) || nl == std::string_view::npos)
      throw MalformedRecord(key, fmt::format("no {} line", head));
    std::string_view value = text.substr(head.size(), nl - head.size());
    text.remove_prefix(nl + 1);
    return value;
  };
  const std::string_view run = line("job_run_id=");
  if (!config::is_valid_run_id(run)) throw MalformedRecord(key, "job_run_id is not a run id");
  into.job_run_id = std::string(run);
  into.store_port = static_cast<int>(decode_count(line("store_port="), 1, 65535, key));
  into.record = decode_join(text, key);
}

std::vector<Member> decode_members(std::string_view run_id, const std::vector<KeyValue>& kvs) {
  std::vector<Member> out;
  for (const KeyValue& kv : kvs) {
    auto lease = lease_of_member_key(run_id, kv.key);
    if (!lease) continue;
    Member m{*lease, kv.create_revision, {}, {}, 0};
    decode_member(kv.value, kv.key, m);
    out.push_back(std::move(m));
  }
  return out;
}

std::optional<int> rank_of(const Decision& decision, std::int64_t lease) {
  auto it = std::find(decision.leases.begin(), decision.leases.end(), lease);
  if (it == decision.leases.end()) return std::nullopt;
  return static_cast<int>(it - decision.leases.begin());
}

std::optional<std::int64_t> first_alive(const std::vector<std::int64_t>& leases,
                                        const std::set<std::int64_t>& alive) {
  for (std::int64_t l : leases)
    if (alive.contains(l)) return l;
  return std::nullopt;
}

std::optional<Decision> decide(std::vector<Member> members, int num_machines,
                               std::optional<int> total_processes) {
  if (static_cast<int>(members.size()) < num_machines) return std::nullopt;
  std::stable_sort(members.begin(), members.end(), [](const Member& a, const Member& b) {
    return a.create_revision < b.create_revision;
  });
  members.resize(num_machines);
  const auto given = std::count_if(members.begin(), members.end(),
                                   [](const Member& m) { return m.record.machine_rank >= 0; });
  Decision decision;
  if (given != 0 && given != num_machines) {
    std::vector<std::string> without;
    for (const Member& m : members)
      if (m.record.machine_rank < 0)
        without.push_back(fmt::format("{} (pid {})", m.record.host, m.record.pid));
    decision.outcome = JoinProblem{
        2, fmt::format("the machines cannot form one job: some launchers give --machine_rank and "
                       "some do not ({}); with etcd, give it on every machine or on none",
                       fmt::join(without, ", "))};
    return decision;
  }
  std::vector<JoinRecord> records;
  for (std::size_t i = 0; i < members.size(); ++i) {
    records.push_back(members[i].record);
    if (given == 0) records.back().machine_rank = static_cast<int>(i);  // arrival order
  }
  decision.outcome = decide_layout(records, num_machines, total_processes);
  if (auto* layout = std::get_if<Layout>(&decision.outcome)) {
    decision.leases.assign(num_machines, 0);
    decision.hosts.assign(num_machines, "");
    decision.ports.assign(num_machines, 0);
    for (std::size_t i = 0; i < members.size(); ++i) {
      decision.leases[records[i].machine_rank] = members[i].lease;
      decision.hosts[records[i].machine_rank] = records[i].host;
      decision.ports[records[i].machine_rank] = members[i].store_port;
      if (records[i].machine_rank == 0) layout->run_id = members[i].job_run_id;
    }
  }
  return decision;
}

std::string encode(const Decision& d) {
  std::vector<std::string> hosts;
  for (std::string host : d.hosts) {
    std::replace_if(
        host.begin(), host.end(), [](char c) { return c == ' ' || c == '\n'; }, '_');
    hosts.push_back(host.empty() ? "?" : host);
  }
  return fmt::format("members {}\nhosts {}\nports {}\n{}", fmt::join(d.leases, " "),
                     fmt::join(hosts, " "), fmt::join(d.ports, " "), encode_layout(d.outcome));
}

namespace {
std::vector<std::string_view> words(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start < line.size()) {
    auto space = line.find(' ', start);
    if (space == std::string_view::npos) space = line.size();
    if (space > start) out.push_back(line.substr(start, space - start));
    start = space + 1;
  }
  return out;
}

std::string_view take_line(std::string_view& text, std::string_view head, std::string_view key) {
  auto nl = text.find('\n');
  if (nl == std::string_view::npos) throw MalformedRecord(key, fmt::format("no '{}' line", head));
  std::string_view line = text.substr(0, nl);
  text.remove_prefix(nl + 1);
  if (line != head && !line.starts_with(std::string(head) + " "))
    throw MalformedRecord(key, fmt::format("no '{}' line", head));
  return line.substr(std::min(line.size(), head.size() + 1));
}
}  // namespace

Decision decode_decision(std::string_view text, std::string_view key) {
  Decision d;
  std::set<std::int64_t> distinct;
  for (auto word : words(take_line(text, "members", key))) {
    if (d.leases.size() >= static_cast<std::size_t>(kMaxMachines))
      throw MalformedRecord(key, "too many members");
    d.leases.push_back(decode_count(word, 1, std::numeric_limits<std::int64_t>::max(), key));
    if (!distinct.insert(d.leases.back()).second) throw MalformedRecord(key, "a lease given twice");
  }
  for (auto word : words(take_line(text, "hosts", key))) {
    if (d.hosts.size() >= d.leases.size()) throw MalformedRecord(key, "more hosts than members");
    d.hosts.push_back(decode_name(word, key));
  }
  for (auto word : words(take_line(text, "ports", key))) {
    if (d.ports.size() >= d.leases.size()) throw MalformedRecord(key, "more ports than members");
    d.ports.push_back(static_cast<int>(decode_count(word, 1, 65535, key)));
  }
  d.outcome = decode_layout(text, key);
  if (const auto* layout = std::get_if<Layout>(&d.outcome)) {
    if (layout->local_processes.size() != d.leases.size() || d.hosts.size() != d.leases.size() ||
        d.ports.size() != d.leases.size())
      throw MalformedRecord(key, "lists of different lengths");
  }
  return d;
}

void check_decision(const Decision& decision, int num_machines, int max_machines,
                    std::string_view key) {
  const auto* layout = std::get_if<Layout>(&decision.outcome);
  if (!layout) return;
  const auto n = static_cast<int>(layout->local_processes.size());
  if (num_machines > 0 ? n != num_machines : n > max_machines) {
    throw MalformedRecord(key, fmt::format("a layout of {} machines for a job of {}", n,
                                           num_machines > 0 ? num_machines : max_machines));
  }
}

JoinProblem too_few(const std::vector<Member>& members, int num_machines,
                    std::string_view endpoints, std::chrono::milliseconds timeout) {
  std::vector<std::string> joined;
  for (const Member& m : members)
    joined.push_back(fmt::format("{} (pid {})", m.record.host, m.record.pid));
  return JoinProblem{
      1, fmt::format("only {} of {} machines joined through etcd at {} within --rdzv_timeout "
                     "{:g}s (joined: {}); start xlaunch on every machine with the same "
                     "--rdzv_endpoint and --rdzv_id, or raise --rdzv_timeout",
                     members.size(), num_machines, endpoints, seconds(timeout),
                     joined.empty() ? "none" : fmt::format("{}", fmt::join(joined, ", ")))};
}

Decision elastic_decision(const std::vector<Member>& chosen, const std::string& run_id) {
  Decision d;
  std::vector<JoinRecord> records;
  std::vector<int> slots;
  for (const Member& m : chosen) {
    d.leases.push_back(m.lease);
    d.hosts.push_back(m.record.host);
    d.ports.push_back(m.store_port);
    records.push_back(m.record);
    slots.push_back(static_cast<int>(slots.size()));
  }
  d.outcome = elastic_layout(records, slots, run_id);
  return d;
}

NextRound next_round(const Decision& previous, std::vector<Member> present, int max_machines) {
  std::stable_sort(present.begin(), present.end(), [](const Member& a, const Member& b) {
    return a.create_revision < b.create_revision;
  });
  NextRound next;
  for (std::size_t m = 0; m < previous.leases.size(); ++m) {
    auto it = std::find_if(present.begin(), present.end(),
                           [&](const Member& x) { return x.lease == previous.leases[m]; });
    if (it != present.end()) {
      next.members.push_back(*it);
    } else {
      JoinRecord gone;
      gone.machine_rank = static_cast<int>(m);
      gone.host = m < previous.hosts.size() ? previous.hosts[m] : "?";
      next.lost.push_back(gone);
    }
  }
  for (const Member& m : present) {
    if (static_cast<int>(next.members.size()) >= max_machines) break;
    if (std::find(previous.leases.begin(), previous.leases.end(), m.lease) == previous.leases.end())
      next.members.push_back(m);
  }
  return next;
}

std::optional<int> latest_layout_round(std::string_view run_id,
                                       const std::vector<std::string>& keys) {
  const std::string prefix = job_key(run_id, "round/");
  std::optional<int> best;
  for (std::string_view key : keys) {
    if (!key.starts_with(prefix)) continue;
    key.remove_prefix(prefix.size());
    auto slash = key.find('/');
    if (slash == std::string_view::npos || key.substr(slash + 1) != "layout") continue;
    int r = 0;
    auto [end, ec] = std::from_chars(key.data(), key.data() + slash, r);
    if (ec != std::errc() || end != key.data() + slash || r < 0) continue;
    if (!best || r > *best) best = r;
  }
  return best;
}

}  // namespace xlaunch::cluster::etcd
