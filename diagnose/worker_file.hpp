// Files a worker can replace: its stacks note and its dump file lie in a folder it writes to,
// and a hostile or buggy one may put a FIFO there (the launcher's loop would block in open)
// or a link to /dev/zero (it would read without end). Such a file is read only when it is a
// regular file, without blocking, up to a cap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace xlaunch::diagnose {

/// The bytes of `path` from `offset` on, at most `max_bytes` of them; nullopt when it cannot
/// be opened or is not a regular file (a link is not followed).
std::optional<std::string> read_worker_file(const std::string& path, std::uintmax_t offset,
                                            std::size_t max_bytes);

}  // namespace xlaunch::diagnose
