// The console's fast path for the common case of a chatty rank: a read of whole, plain
// lines, prefixed in one pass. Pure; no I/O.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "launcher/console_batch.hpp"
#include "launcher/line_splitter.hpp"

namespace xlaunch::launcher {

struct PrefixedLines {
  std::size_t consumed = 0;    // bytes of the input taken
  std::uint64_t lines = 0;     // lines added to the batch
  std::string_view last_text;  // the last non-empty one's text (a view of the input)
};

/// Adds the lines at the start of `bytes` to `out` exactly as LineSplitter::feed and
/// ConsoleBatch::add would, one "[prefix]text\n" each, while they end in '\n', hold no '\r'
/// and are at most `max_line` bytes long; stops before the first line that does not, or the
/// unterminated tail, for the splitter to take on. Copies and searches 16 bytes at a time,
/// with no call per line: per line, the general path cost more than the kernel's pipe copy.
PrefixedLines prefix_plain_lines(ConsoleBatch& out, std::string_view prefix, std::string_view bytes,
                                 std::size_t max_line);

/// One read of a shown stream, in order: the splitter ends the line the last read cut (most
/// reads cut one), prefix_plain_lines takes the plain lines after it, then `on_plain` hears
/// what it took, then the splitter takes the rest. `emit` gets the splitter's pieces. What
/// `out` receives is what the splitter alone would give with an `emit` that adds each piece
/// to `out`.
template <typename Emit, typename OnPlain>
void feed_shown(LineSplitter& splitter, ConsoleBatch& out, std::string_view prefix,
                std::string_view bytes, Emit&& emit, OnPlain&& on_plain) {
  if (splitter.has_partial() && !bytes.empty()) {
    const std::size_t newline = find_from(bytes, 0, '\n');
    const std::size_t end = std::min(newline, find_from(bytes.substr(0, newline), 0, '\r'));
    const std::size_t through = std::min(end + 1, bytes.size());
    splitter.feed(bytes.substr(0, through), emit);
    bytes.remove_prefix(through);
  }
  if (!splitter.has_partial()) {
    const PrefixedLines plain = prefix_plain_lines(out, prefix, bytes, splitter.max_piece());
    if (plain.lines > 0) on_plain(plain);
    bytes.remove_prefix(plain.consumed);
  }
  splitter.feed(bytes, emit);
}

}  // namespace xlaunch::launcher
