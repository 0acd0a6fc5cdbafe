// A file that someone else may have changed (a run folder, a rank's own notes), read only when
// it is a regular file: opened without blocking (a FIFO would never answer), refused when it is
// anything else (a link to /dev/zero would never end), and never beyond a cap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace xlaunch::config {

struct RegularFile {
  enum class Status { Ok, Missing, NotRegular, TooLarge, Unreadable } status = Status::Missing;
  std::string text;         // Ok: the content
  std::string kind;         // NotRegular: "a FIFO", "a character device", ...
  std::uintmax_t size = 0;  // TooLarge: its size
  int error = 0;            // Unreadable: the errno
};

/// Reads `path` (a link is followed) if it is a regular file of at most `max_bytes`.
RegularFile read_regular_file(const std::string& path, std::size_t max_bytes);
/// Reads `path` (a link is followed) if it is not a folder, blocking as a plain read would (a
/// FIFO or `<(process substitution)` waits for its writer), and never beyond `max_bytes`: a
/// device that never ends (/dev/zero) is TooLarge, not a process that grows until it dies.
RegularFile read_bounded_stream(const std::string& path, std::size_t max_bytes);
/// What a file of stat(2) mode `mode` is, for messages: "a folder", "a FIFO", "a character
/// device", "a block device", "a socket", else "not a plain file".
const char* file_kind(unsigned mode);
/// file_kind of what `path` names (a link is followed) when that exists and is not a regular
/// file; nullopt for a regular file or nothing at all.
std::optional<std::string> non_regular_kind(const std::string& path);
/// The content alone: nullopt for anything but a regular file of at most `max_bytes`.
std::optional<std::string> read_regular_text(const std::string& path, std::size_t max_bytes);

}  // namespace xlaunch::config
