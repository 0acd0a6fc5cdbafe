// What the launcher has still to show on one console stream (stdout or stderr), bounded so
// that a console that stops reading can never make the launcher wait or grow without end.
// Pure: the OS side (console_posix.cpp) writes from it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace xlaunch::launcher {

class ConsoleBuffer {
 public:
  /// `worker_cap`: bytes of workers' lines held at most; xlaunch's own messages may use
  /// `reserve` bytes more, so a report is not dropped because workers filled the buffer.
  explicit ConsoleBuffer(std::size_t worker_cap = 1 << 20, std::size_t reserve = 256 << 10);

  /// Queues a worker's whole line(s): those that fit, in order; the others are dropped
  /// (and counted).
  void add_worker_text(std::string_view lines);
  /// Queues one of xlaunch's own messages; dropped only when even the reserve is full.
  void add_own_text(std::string_view lines);

  /// Bytes waiting to be written, oldest first.
  std::string_view pending() const { return std::string_view(data_).substr(start_); }
  /// Marks the first `n` pending bytes as written.
  void consume(std::size_t n);

  /// The console is gone (EPIPE, say): everything queued or added later is lost, silently.
  void close();
  bool closed() const { return closed_; }

  /// Lines dropped since the last notice; when some were and there is room again, queues
  /// one "xlaunch: N console lines dropped" line. Call after each write.
  void note_drops_if_any();

  std::uint64_t dropped_lines_total() const { return dropped_total_; }
  /// Lines queued but never written because the console closed.
  std::uint64_t lost_lines_total() const { return lost_total_; }

 private:
  // Queues `lines` if the pending bytes stay within `cap`, else drops and counts them.
  void add(std::string_view lines, std::size_t cap);
  void append(std::string_view lines);

  std::string data_;
  std::size_t start_ = 0;  // written prefix of data_, dropped lazily
  std::size_t worker_cap_;
  std::size_t reserve_;
  std::uint64_t dropped_since_notice_ = 0;
  std::uint64_t dropped_total_ = 0;
  std::uint64_t lost_total_ = 0;
  bool closed_ = false;
};

/// Lines in a chunk: its '\n' and '\r' terminators, and 1 for an unterminated tail.
std::uint64_t count_lines(std::string_view text);

}  // namespace xlaunch::launcher
