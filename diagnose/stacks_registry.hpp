// How `xlaunch stacks [RUN_ID]` finds a running launcher: each launcher writes its pid to
// <runtime>/<run_id>.pid while it supervises workers, and the grouped stacks it dumps to
// <runtime>/<run_id>.stacks. <runtime> is $XDG_RUNTIME_DIR/xlaunch when that is set, else
// /tmp/xlaunch-<uid>.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace xlaunch::diagnose {

/// The folder (pure); `env` is a process environment (the launcher's Environment).
std::string registry_dir(const std::map<std::string, std::string>& env, unsigned uid);

/// A live launcher's entry.
struct RunningLauncher {
  std::string run_id;
  long pid = 0;
};

/// Writes <dir>/<run_id>.pid (atomically) and removes it on destruction.
class LauncherRegistration {
 public:
  LauncherRegistration(std::string dir, std::string run_id);
  ~LauncherRegistration();
  LauncherRegistration(const LauncherRegistration&) = delete;
  LauncherRegistration& operator=(const LauncherRegistration&) = delete;
  /// Writes the grouped stacks text for `xlaunch stacks` to read (atomically).
  void publish_stacks(const std::string& text) const;
  std::string stacks_path() const { return dir_ + "/" + run_id_ + ".stacks"; }
  /// The request files of `xlaunch stacks` commands waiting now (<run_id>.want.<pid>); a
  /// dump that starts after a request answers it by removing its file (answer()).
  std::vector<std::string> requests() const;
  void answer(const std::vector<std::string>& requests) const;

 private:
  std::string dir_;
  std::string run_id_;
  bool written_ = false;
};

/// The launchers registered in `dir` whose process is alive.
std::vector<RunningLauncher> running_launchers(const std::string& dir);

/// `xlaunch stacks [RUN_ID]`: sends SIGUSR1 to the launcher of RUN_ID (or the only one
/// running), waits up to `wait` for a dump that began after the request and prints it. Returns the
/// exit code: 0; 1 when none answered; 2 when no launcher matches or several do without RUN_ID.
int ask_for_stacks(const std::string& dir, const std::optional<std::string>& run_id,
                   std::chrono::milliseconds wait);

}  // namespace xlaunch::diagnose
