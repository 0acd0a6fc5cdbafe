// torchelastic's error file (TORCHELASTIC_ERROR_FILE), as @record writes it:
// {"message": {"message": "ValueError: ...", "extraInfo": {"py_callstack": "Traceback ...",
// "timestamp": "..."}}}, or {"message": "text"}. Read so the report shows the traceback as
// the lines Python printed, not as one JSON line. Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace xlaunch::launcher {

struct ErrorFileContent {
  std::string message;    ///< the exception, e.g. "ValueError: bad batch"
  std::string traceback;  ///< Python's traceback text (may be empty)
};

/// nullopt when `json` is not an error file of that shape (then show it as it is).
std::optional<ErrorFileContent> parse_error_file(std::string_view json);

}  // namespace xlaunch::launcher
