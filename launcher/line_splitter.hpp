// Cuts a worker's byte stream into console lines. Pure; no I/O.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

namespace xlaunch::launcher {

/// Feeds bytes in, calls back once per complete piece: text up to and including a '\n'
/// or a '\r' (tqdm redraws a progress bar with '\r'), or `max_piece` bytes of a longer line
/// (terminator '\0' then: the line goes on). A trailing partial line waits for more bytes
/// or flush().
class LineSplitter {
 public:
  explicit LineSplitter(std::size_t max_piece = 16 * 1024) : max_piece_(max_piece) {}

  /// `emit(std::string_view text, char terminator)`; text excludes the terminator.
  template <typename Emit>
  void feed(std::string_view bytes, Emit&& emit);

  /// Emits what is left as a piece without terminator (at end of stream).
  template <typename Emit>
  void flush(Emit&& emit);

  bool has_partial() const { return !pending_.empty(); }
  std::size_t partial_size() const { return pending_.size(); }
  std::size_t max_piece() const { return max_piece_; }

 private:
  std::size_t max_piece_;
  std::string pending_;
};

/// Offset of the first `c` in `bytes` at or after `from`, or bytes.size().
inline std::size_t find_from(std::string_view bytes, std::size_t from, char c) {
  const void* hit = std::memchr(bytes.data() + from, c, bytes.size() - from);
  return hit ? static_cast<std::size_t>(static_cast<const char*>(hit) - bytes.data())
             : bytes.size();
}

template <typename Emit>
void LineSplitter::feed(std::string_view bytes, Emit&& emit) {
  // One memchr per line: the next '\n' and the next '\r' ('\r' is rare: progress bars) are
  // each searched once and kept until passed. find_first_of would call memchr once per byte,
  // which made the console path CPU-bound.
  const std::size_t size = bytes.size();
  if (size == 0) return;  // memchr wants a valid pointer even for no bytes
  std::size_t pos = 0;
  std::size_t newline = find_from(bytes, 0, '\n');
  std::size_t carriage = find_from(bytes, 0, '\r');
  while (pos < size) {
    if (newline < pos) newline = find_from(bytes, pos, '\n');
    if (carriage < pos) carriage = find_from(bytes, pos, '\r');
    const std::size_t stop = std::min(newline, carriage);
    const std::size_t room = max_piece_ - pending_.size();
    if (stop == size || stop - pos > room) {
      if (size - pos < room) {
        pending_.append(bytes.substr(pos));
        return;
      }
      pending_.append(bytes.substr(pos, room));
      emit(std::string_view(pending_), '\0');
      pending_.clear();
      pos += room;
      continue;
    }
    if (pending_.empty()) {
      emit(bytes.substr(pos, stop - pos), bytes[stop]);
    } else {
      pending_.append(bytes.substr(pos, stop - pos));
      emit(std::string_view(pending_), bytes[stop]);
      pending_.clear();
    }
    pos = stop + 1;
  }
}

template <typename Emit>
void LineSplitter::flush(Emit&& emit) {
  if (pending_.empty()) return;
  emit(std::string_view(pending_), '\0');
  pending_.clear();
}

}  // namespace xlaunch::launcher
