// Paths handed to workers, which may change their working folder (Hydra does): relative ones
// made absolute against the launcher's.
#pragma once

#include <string>

namespace xlaunch::config {

/// `path` made absolute; itself when the working folder cannot be read.
std::string absolute_path(const std::string& path);

/// $TMPDIR when set and not empty, else /tmp; absolute.
std::string temp_root();

}  // namespace xlaunch::config
