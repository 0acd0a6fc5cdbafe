#include "launcher/console_buffer.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace xlaunch::launcher {

std::uint64_t count_lines(std::string_view text) {
  std::uint64_t n = 0;
  for (char c : text) n += (c == '\n' || c == '\r') ? 1 : 0;
  if (!text.empty() && text.back() != '\n' && text.back() != '\r') ++n;
  return n;
}

ConsoleBuffer::ConsoleBuffer(std::size_t worker_cap, std::size_t reserve)
    : worker_cap_(worker_cap), reserve_(reserve) {}

void ConsoleBuffer::add_worker_text(std::string_view lines) { add(lines, worker_cap_); }

void ConsoleBuffer::add_own_text(std::string_view lines) { add(lines, worker_cap_ + reserve_); }

namespace {

// Length of the whole lines at the start of `lines` that fit in `room` bytes: up to and
// including the last terminator there.
std::size_t whole_lines_within(std::string_view lines, std::size_t room) {
  for (std::size_t end = std::min(room, lines.size()); end > 0; --end) {
    if (lines[end - 1] == '\n' || lines[end - 1] == '\r') return end;
  }
  return 0;
}

}  // namespace

void ConsoleBuffer::add(std::string_view lines, std::size_t cap) {
  if (closed_) {
    lost_total_ += count_lines(lines);
    return;
  }
  const std::size_t room = cap > pending().size() ? cap - pending().size() : 0;
  if (lines.size() > room) {
    // The lines that fit are kept, the rest dropped and counted: a batch is never split
    // inside a line.
    const std::size_t kept = whole_lines_within(lines, room);
    const std::uint64_t n = count_lines(lines.substr(kept));
    dropped_since_notice_ += n;
    dropped_total_ += n;
    lines = lines.substr(0, kept);
  }
  if (!lines.empty()) append(lines);
}

void ConsoleBuffer::append(std::string_view lines) {
  // Drop the written prefix once it is most of the buffer, so appends stay amortized O(n).
  if (start_ > 0 && start_ >= data_.size() / 2) {
    data_.erase(0, start_);
    start_ = 0;
  }
  data_.append(lines);
}

void ConsoleBuffer::consume(std::size_t n) {
  start_ += std::min(n, data_.size() - start_);
  if (start_ == data_.size()) {
    data_.clear();
    start_ = 0;
  }
}

void ConsoleBuffer::close() {
  if (closed_) return;
  closed_ = true;
  lost_total_ += count_lines(pending());
  data_.clear();
  data_.shrink_to_fit();
  start_ = 0;
}

void ConsoleBuffer::note_drops_if_any() {
  if (closed_ || dropped_since_notice_ == 0 || pending().size() > worker_cap_ / 2) return;
  append(
      fmt::format("xlaunch: {} console line{} dropped: the console could not keep up "
                  "(--log_dir keeps every line)\n",
                  dropped_since_notice_, dropped_since_notice_ == 1 ? "" : "s"));
  dropped_since_notice_ = 0;
}

}  // namespace xlaunch::launcher
