// Python stacks as faulthandler writes them, grouped across ranks (pure): identical stacks
// (thread ids aside) are shown once with their ranks, under a one-line headline such as
// "all_reduce at train.py:42".
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace xlaunch::diagnose {

/// One faulthandler dump with thread ids blanked ("Thread 0x00007f3a... " -> "Thread "), so
/// that the same place in two processes compares equal. Blank lines trimmed at both ends.
std::string normalize_dump(std::string_view dump);

/// "FUNC at FILE:LINE" for the main thread (the one whose outermost frame is <module>, else
/// the first): the innermost frame in the user's code, named by the library function it
/// called (frames under site-packages, dist-packages or the standard library are library).
/// Empty when the dump has no frame.
std::string stack_headline(std::string_view dump);

/// A rank's stacks, or why there are none ("stacks not available: not a Python worker").
struct RankStacks {
  int rank = 0;
  std::string dump;  // faulthandler's text; empty when `missing` says why
  std::string missing;
};

struct StackGroup {
  std::vector<int> ranks;  // ascending
  std::string headline;    // or the reason stacks are missing
  std::string dump;        // normalized; empty for a missing group
};

/// Groups ranks with equal normalized dumps (or the same missing reason), largest first.
std::vector<StackGroup> group_stacks(const std::vector<RankStacks>& ranks);

/// "0,2,3" (ranges are not compressed: rank lists in reports are searched by eye and grep).
std::string rank_list(const std::vector<int>& ranks);

/// The groups as report lines: "ranks 0,2,3: all_reduce at train.py:42" then the stack,
/// indented; each line prefixed with `prefix`.
std::string format_stack_groups(const std::vector<StackGroup>& groups, std::string_view prefix);

}  // namespace xlaunch::diagnose
