// Replacing a file so that readers see either the old contents or the new, never a part.
#pragma once

#include <string>
#include <string_view>

namespace xlaunch::config {

/// Writes `content` to a temporary file in `path`'s directory, fsyncs it, and renames it
/// over `path`; creates missing parent directories. On any failure the temporary is
/// removed, `path` is left as it was, and std::system_error names the step and the path.
/// Blocks on disk I/O. A new file gets mode 0644 less the umask; a replaced file keeps its
/// permissions (not setuid, setgid or sticky bits). A symbolic link at `path` is replaced,
/// its target left alone; a FIFO, device or socket there is refused.
void atomic_write(const std::string& path, std::string_view content);

}  // namespace xlaunch::config
