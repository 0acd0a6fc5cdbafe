// The launcher's console (its stdout and stderr): workers' prefixed lines and xlaunch's own
// messages. Writing never blocks: what the console cannot take now waits in a bounded
// buffer (ConsoleBuffer), lines that do not fit are dropped and counted, and a console
// that went away (EPIPE) is ignored from then on. Supervision therefore never waits on a
// terminal or a pipe whose reader stalled. Thread-safe.
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string_view>

namespace xlaunch::launcher {

enum class ConsoleStream { out = 0, err = 1 };

struct ConsoleStats {
  std::uint64_t dropped_lines = 0;  // not shown: the console could not keep up
  std::uint64_t lost_lines = 0;     // not shown: the console was closed
  bool out_closed = false;
  bool err_closed = false;
};

/// A worker's line(s), all of one read: written now, straight from `lines`, where nothing
/// waits and the console takes them; otherwise queued, as many whole ones as the console's
/// buffer holds (the others are dropped and counted), for console_flush_now().
void console_worker_text(ConsoleStream stream, std::string_view lines);
/// Queues one of xlaunch's own messages on stderr and writes what the console takes now.
void console_say(std::string_view text);

template <typename... Args>
void say(fmt::format_string<Args...> format, Args&&... args) {
  console_say(fmt::format(format, std::forward<Args>(args)...));
}

/// Writes what the console takes now without waiting. True when bytes remain queued.
bool console_flush_now();
/// The descriptor to wait on for writability while `stream` has bytes queued; -1 when
/// nothing is queued or waiting cannot help (a regular file).
int console_wait_fd(ConsoleStream stream);
/// Called, from whichever thread queued text, when bytes stay queued after a write: the
/// supervisor uses it to wait for writability in its loop. Empty to stop.
void console_on_backlog(std::function<void()> notify);
/// Writes what is queued, waiting at most `limit` in all (at exit); the rest is dropped.
void console_drain(std::chrono::milliseconds limit);

ConsoleStats console_stats();

}  // namespace xlaunch::launcher
