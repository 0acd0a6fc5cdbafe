#include "diagnose/stall_report.hpp"

#include <fmt/format.h>

#include <ctime>

#include "config/text.hpp"
#include "diagnose/safe_text.hpp"

namespace xlaunch::diagnose {

using config::iso_time;
using config::json_quote;

namespace {

std::string ago(Clock::time_point then, Clock::time_point now) {
  const auto s = std::chrono::duration_cast<std::chrono::seconds>(now - then).count();
  return fmt::format("{} ({}s ago)", clock_time(then), s < 0 ? 0 : s);
}

std::string json_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + json_quote(items[i]);
  return out + "]";
}

}  // namespace

std::string clock_time(Clock::time_point t) {
  const std::time_t secs = Clock::to_time_t(t);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  return fmt::format("{:02}:{:02}:{:02}", tm.tm_hour, tm.tm_min, tm.tm_sec);
}

std::string ended_text(const RankStallState& r) {
  if (!r.ended_at) return r.ended;
  return fmt::format("{} at {}", r.ended, clock_time(*r.ended_at));
}

std::optional<std::string> odd_one_out(const StallReport& report) {
  const auto& g = report.stacks;
  if (g.size() < 2 || g[0].ranks.size() <= g[1].ranks.size()) return std::nullopt;
  std::string out;
  for (std::size_t i = 1; i < g.size(); ++i) {
    if (!out.empty()) out += "; ";
    out += fmt::format("{} {} ({})", g[i].ranks.size() == 1 ? "rank" : "ranks",
                       rank_list(g[i].ranks), g[i].headline);
  }
  return out;
}

std::string format_stall_report(const StallReport& r) {
  std::string out = fmt::format(
      "xlaunch: stall: no output, no store traffic and no CPU time to speak of from any worker "
      "for {:.0f}s (--stall_timeout)\n",
      r.window_seconds);
  for (const RankStallState& s : r.ranks) {
    std::string state = !s.alive    ? ended_text(s)
                        : s.stopped ? fmt::format(
                                          "stopped (pid {}; SIGSTOP, Ctrl-Z or a "
                                          "debugger: SIGCONT resumes it)",
                                          s.pid)
                                    : fmt::format("alive (pid {})", s.pid);
    out += fmt::format("xlaunch:   rank {}: {}, CPU {:.1f}s over the window ({:.0f}%)\n", s.rank,
                       state, s.cpu_seconds,
                       r.window_seconds > 0 ? 100.0 * s.cpu_seconds / r.window_seconds : 0.0);
    if (s.last_line && s.last_output) {
      out += fmt::format("xlaunch:     last output {}: {}\n", ago(*s.last_output, r.at),
                         escape_controls(*s.last_line, false));
    } else {
      out += "xlaunch:     no output yet\n";
    }
    if (!s.waiting_keys.empty()) {
      std::string keys;
      // Keys are any bytes a client sent: escaped, so one cannot forge the launcher's lines.
      for (const std::string& k : s.waiting_keys) {
        keys += (keys.empty() ? "" : ", ") + escape_controls(k, false);
      }
      out += fmt::format("xlaunch:     blocked in a store wait for: {}\n", keys);
    }
    for (const std::string& d : s.dialing) {
      out += fmt::format("xlaunch:     connecting to {} (not connected)\n", d);
    }
  }
  if (auto odd = odd_one_out(r)) out += fmt::format("xlaunch: odd one out: {}\n", *odd);
  if (!r.stacks.empty()) {
    out += "xlaunch: stacks, identical ones once:\n";
    out += format_stack_groups(r.stacks, "xlaunch:   ");
  }
  return out;
}

std::string stall_json(const StallReport& r) {
  std::string ranks;
  for (const RankStallState& s : r.ranks) {
    ranks += fmt::format(
        "{}{{\"rank\": {}, \"pid\": {}, \"alive\": {}, \"stopped\": {}, \"ended\": {}, "
        "\"cpu_seconds\": {:.3f}, "
        "\"last_line\": {}, \"last_output\": {}, \"waiting_keys\": {}, \"dialing\": {}}}",
        ranks.empty() ? "" : ", ", s.rank, s.pid, s.alive ? "true" : "false",
        s.stopped ? "true" : "false", s.alive ? "null" : json_quote(ended_text(s)), s.cpu_seconds,
        s.last_line ? json_quote(*s.last_line) : "null",
        s.last_output ? json_quote(iso_time(*s.last_output)) : "null", json_list(s.waiting_keys),
        json_list(s.dialing));
  }
  std::string groups;
  for (const StackGroup& g : r.stacks) {
    groups += fmt::format("{}{{\"ranks\": [{}], \"headline\": {}, \"stack\": {}}}",
                          groups.empty() ? "" : ", ", rank_list(g.ranks), json_quote(g.headline),
                          json_quote(g.dump));
  }
  const auto odd = odd_one_out(r);
  return fmt::format(
      "{{\"at\": {}, \"window_seconds\": {:.1f}, \"odd_one_out\": {}, \"ranks\": [{}], "
      "\"stacks\": [{}]}}",
      json_quote(iso_time(r.at)), r.window_seconds, odd ? json_quote(*odd) : "null", ranks, groups);
}

}  // namespace xlaunch::diagnose
