// Text from a worker's files shown on the user's terminal (a stack dump, read from a file
// the worker can write): control characters escaped, so that nothing it holds can move the
// cursor, retitle the window or clear the screen.
#pragma once

#include <string>
#include <string_view>

namespace xlaunch::diagnose {

/// `text` with C0 controls other than newline and tab, DEL and the C1 controls (U+0080 to
/// U+009F, as UTF-8) written as \xNN / \u00NN. Other bytes, valid UTF-8 or not, are kept.
/// With `keep_newlines` false a newline is escaped too: text shown within one line of the
/// launcher's own (a store key, a rank's last line) cannot start a forged line.
std::string escape_controls(std::string_view text, bool keep_newlines = true);

}  // namespace xlaunch::diagnose
