// Exit codes of xlaunch, in one place (documented in docs/launch.md).
#pragma once

namespace xlaunch::exit_status {

inline constexpr int kSuccess = 0;
inline constexpr int kFailure = 1;     // launcher-side failure (store, spawn, internal)
inline constexpr int kUsageError = 2;  // bad flag, bad value, bad config file
inline constexpr int kStalled = 124;   // --on_stall stop ended a stalled job (timeout(1)'s code)
inline constexpr int kCannotExecute = 126;
inline constexpr int kNotFound = 127;
inline constexpr int kSignalBase = 128;  // 128 + signal number, e.g. 130 after Ctrl-C

}  // namespace xlaunch::exit_status
