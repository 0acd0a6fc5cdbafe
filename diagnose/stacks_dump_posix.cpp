// Python stacks on demand: the dump signal to every rank whose faulthandler is registered and
// still writes to xlaunch's file (stacks_target.hpp), then polling their dump files until each
// is complete (or 3 s passed).

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "config/regular_file.hpp"
#include "diagnose/safe_text.hpp"
#include "diagnose/stacks_site.hpp"
#include "diagnose/stacks_target.hpp"
#include "diagnose/stall_monitor_impl.hpp"

namespace xlaunch::diagnose {
namespace {

constexpr auto kDumpPoll = std::chrono::milliseconds(100);
constexpr int kDumpPolls = 30;  // a rank that has not dumped within 3s is reported without

// Every dump of the run so far, each of all a rank's threads, 100 frames each, is far below
// this; the rank can write to the file too.
constexpr std::size_t kMaxDumpBytes = 8u << 20;

std::uintmax_t size_of(const std::string& path) {
  std::error_code ec;
  const auto n = std::filesystem::file_size(path, ec);
  return ec ? 0 : n;
}

}  // namespace

void StallMonitor::Impl::collect_stacks(std::function<void(std::vector<RankStacks>)> done) {
  collecting = true;
  auto result = std::make_shared<std::vector<RankStacks>>();
  auto pending = std::make_shared<std::vector<Pending>>();
  for (auto& [local, r] : ranks) {
    if (!r.started) continue;
    RankStacks s;
    s.rank = r.rank;
    if (!r.alive) {
      s.missing = ended_text(state_of(r));
    } else if (!options.python_stacks) {
      s.missing = "stacks not available (--python_stacks false)";
    } else if (!options.python_ranks) {
      s.missing = missing_text(DumpTarget::not_python);
    } else {
      // Sent only to a rank whose faulthandler is registered and writes to our file, as
      // checked right now: a dump must never land in a file the rank opened.
      const std::string path = stacks_file(stacks_dir, r.rank, r.own_pid);
      const auto size = size_of(path);
      const DumpTarget target = request_dump(stacks_dir, {r.rank, r.pid, r.own_pid});
      if (target == DumpTarget::ready) {
        pending->push_back({r.rank, path, size, size});
      } else {
        s.missing = missing_text(target);
      }
    }
    result->push_back(std::move(s));
  }
  poll_dumps(result, pending, 0, std::move(done));
}

void StallMonitor::Impl::poll_dumps(std::shared_ptr<std::vector<RankStacks>> result,
                                    std::shared_ptr<std::vector<Pending>> pending, int round,
                                    std::function<void(std::vector<RankStacks>)> done) {
  bool all = true;
  for (Pending& p : *pending) {
    if (p.done) continue;
    const auto size = size_of(p.path);
    // Complete once it grew and then stayed the same for one poll.
    if (size > p.from && size == p.seen && round > 0) {
      p.done = true;
    } else {
      p.seen = size;
      all = false;
    }
  }
  if (all || round >= kDumpPolls || !active) {
    for (Pending& p : *pending) {
      for (RankStacks& s : *result) {
        if (s.rank != p.rank) continue;
        // The rank can write to its dump file too: nothing in it reaches a terminal raw.
        const std::string text = config::read_regular_text(p.path, kMaxDumpBytes).value_or("");
        s.dump = escape_controls(text.substr(std::min<std::size_t>(p.from, text.size())));
        if (s.dump.empty()) s.missing = "no stacks: it did not answer the dump signal in 3s";
      }
    }
    collecting = false;
    done(std::move(*result));
    if (dump_again && active) {
      dump_again = false;
      dump_on_request();
    }
    return;
  }
  dump_timer.expires_after(kDumpPoll);
  dump_timer.async_wait([this, result, pending, round,
                         done = std::move(done)](const boost::system::error_code& ec) mutable {
    if (ec) {
      collecting = false;
      return;
    }
    poll_dumps(result, pending, round + 1, std::move(done));
  });
}

void StallMonitor::Impl::on_stacks_request(StacksChannel::Reply reply) {
  waiting.push_back(std::move(reply));
  if (!ranks_started) return;  // on_ranks_started answers it
  if (collecting) {
    dump_again = true;  // answered by a dump that starts after the request
    return;
  }
  dump_on_request();
}

void StallMonitor::Impl::dump_on_request() {
  auto replies = std::make_shared<std::vector<StacksChannel::Reply>>(std::move(waiting));
  waiting.clear();
  out.say("xlaunch: stacks requested (xlaunch stacks): dumping every rank's Python stacks\n");
  collect_stacks([this, replies](std::vector<RankStacks> stacks) {
    // The launcher's pid: with one run id in two launchers here, says whose ranks these are.
    const std::string text =
        fmt::format(
            "xlaunch: Python stacks of every rank (launcher pid {}), identical ones "
            "once:\n",
            ::getpid()) +
        format_stack_groups(group_stacks(stacks), "xlaunch:   ");
    out.say(text);
    out.log(text);
    for (const auto& reply : *replies) reply(text);
  });
}

}  // namespace xlaunch::diagnose
