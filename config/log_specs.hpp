// torchrun's console options, typed once the local worker count is known (make_plan): --redirects
// and --tee ("3" for every local rank, or "0:1,1:2" per local rank: bit 1 stdout, bit 2
// stderr) and --local_ranks_filter ("0,2"). The schema checks their syntax as settings; these
// also check each local rank against the count.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "config/settings.hpp"

namespace xlaunch::config {

/// Which of a worker's streams reach the console (torchrun's --redirects: a redirected
/// stream goes to its log file only, unless --tee names it too).
struct ConsoleStreams {
  bool stdout_shown = true;
  bool stderr_shown = true;
};

/// What the console shows of this machine's workers.
struct ConsoleSelection {
  std::optional<std::set<int>> ranks;   // local ranks shown; nullopt: all
  std::vector<ConsoleStreams> streams;  // per local rank
};

/// The selection from --local_ranks_filter, --redirects and --tee (a stream in --tee is
/// shown even when --redirects names it, as in torchrun). Throws UsageError (exit 2) naming the
/// flag and what to give for a value that is not one, or a local rank outside
/// 0..local_world_size-1.
ConsoleSelection console_selection(const Settings& settings, int local_world_size);

/// Parses torchrun's --redirects/--tee value ("3", or "0:1,1:2" per local rank) into the
/// streams each local rank sends to files: bit 1 stdout, bit 2 stderr.
std::vector<int> parse_std_spec(const std::string& flag, const std::string& value,
                                int local_world_size);

/// Parses --local_ranks_filter ("0" or "0,2") into the local ranks shown.
std::set<int> parse_rank_filter(const std::string& value, int local_world_size);

}  // namespace xlaunch::config
