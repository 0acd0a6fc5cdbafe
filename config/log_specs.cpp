#include "config/log_specs.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "config/text.hpp"
#include "config/usage_error.hpp"

namespace xlaunch::config {

std::vector<int> parse_std_spec(const std::string& flag, const std::string& value,
                                int local_world_size) {
  auto bad = [&] {
    return UsageError(fmt::format("{}: '{}' is not a valid value", flag, value),
                      fmt::format("use 0 (none), 1 (stdout), 2 (stderr), 3 (both), or per local "
                                  "rank like {} 0:3,1:2",
                                  flag));
  };
  std::vector<int> per_rank(local_world_size, 0);
  int all = 0;
  if (parse_int(value, all)) {
    if (all < 0 || all > 3) throw bad();
    std::fill(per_rank.begin(), per_rank.end(), all);
    return per_rank;
  }
  for (std::string_view item : split(value, ',')) {
    auto colon = item.find(':');
    int rank = -1, streams = -1;
    if (colon == std::string_view::npos || !parse_int(item.substr(0, colon), rank) ||
        !parse_int(item.substr(colon + 1), streams) || rank < 0 || rank >= local_world_size ||
        streams < 0 || streams > 3) {
      throw bad();
    }
    per_rank[rank] = streams;
  }
  return per_rank;
}

std::set<int> parse_rank_filter(const std::string& value, int local_world_size) {
  std::set<int> ranks;
  for (std::string_view item : split(value, ',')) {
    int rank = -1;
    if (!parse_int(item, rank) || rank < 0 || rank >= local_world_size) {
      throw UsageError(fmt::format("--local_ranks_filter: '{}' is not a local rank in 0..{}",
                                   trim(item), local_world_size - 1),
                       "give comma-separated local ranks, e.g. --local_ranks_filter 0");
    }
    ranks.insert(rank);
  }
  return ranks;
}

ConsoleSelection console_selection(const Settings& s, int local_world_size) {
  ConsoleSelection selection;
  if (s.local_ranks_filter && !trim(*s.local_ranks_filter).empty()) {
    selection.ranks = parse_rank_filter(*s.local_ranks_filter, local_world_size);
  }
  selection.streams.assign(local_world_size, ConsoleStreams{});
  std::vector<int> redirected(local_world_size, 0);
  if (s.redirects) redirected = parse_std_spec("--redirects", *s.redirects, local_world_size);
  // torchrun adds tee on top of redirects (redirs[r] |= tee): a tee'd stream goes to its
  // file and the console, whatever --redirects says.
  std::vector<int> teed(local_world_size, 0);
  if (s.tee) teed = parse_std_spec("--tee", *s.tee, local_world_size);
  for (int r = 0; r < local_world_size; ++r) {
    const int off_console = redirected[r] & ~teed[r];
    selection.streams[r].stdout_shown = !(off_console & 1);
    selection.streams[r].stderr_shown = !(off_console & 2);
  }
  return selection;
}

}  // namespace xlaunch::config
