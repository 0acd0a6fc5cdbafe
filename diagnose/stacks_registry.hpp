// How `xlaunch stacks [RUN_ID]` reaches a running launcher: while it supervises workers, each
// launcher listens on a Unix socket, <runtime>/<run_id>.sock, and answers a request there
// with every rank's grouped stacks. Nothing is signalled to find or ask a launcher: only the
// process that bound the socket can answer it. <runtime> is $XDG_RUNTIME_DIR/xlaunch when
// that is set, else /tmp/xlaunch-<uid>, and is used only when it is a folder of the user's,
// mode 0700, not a symbolic link (as ssh-agent and tmux check theirs).
#pragma once

#include <sys/un.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace xlaunch::diagnose {

/// The folder (pure); `env` is a process environment (the launcher's Environment).
std::string registry_dir(const std::map<std::string, std::string>& env, unsigned uid);

/// What lstat says of the folder.
struct FolderFacts {
  bool exists = false;
  bool is_symlink = false;
  bool is_directory = false;
  unsigned owner = 0;
  unsigned mode = 0;  // permission bits
};

/// Why `dir` must not be used by user `uid` ("<dir> is a symbolic link", "... has mode 0755,
/// not 0700", "... belongs to uid 1001, not to you (uid 1000)"), with what to do; nullopt
/// when it is private. A folder that does not exist is not a problem here.
std::optional<std::string> runtime_dir_problem(const std::string& dir, const FolderFacts& facts,
                                               unsigned uid);

/// The socket's path for a run: <dir>/<run_id>.sock, or, when that is too long for a Unix
/// socket address, a shortened name that ends with a hash of the whole run id.
std::string socket_path(const std::string& dir, const std::string& run_id);

/// `path` as a Unix socket's address; nullopt when it is too long for one.
std::optional<sockaddr_un> unix_address(const std::string& path);

/// Creates the folder (mode 0700) when missing and checks it (runtime_dir_problem).
std::optional<std::string> prepare_runtime_dir(const std::string& dir);

/// A live launcher.
struct RunningLauncher {
  std::string run_id;  // as its socket's name says (shortened for very long ids)
  long pid = 0;
  std::string socket;
};

/// The launchers in `dir` that answer. Removes what is stale: sockets nobody listens on, and
/// pid files older versions left (never signalled).
std::vector<RunningLauncher> running_launchers(const std::string& dir);

/// `xlaunch stacks [RUN_ID]`: asks the launcher of RUN_ID (or the only one running) over its
/// socket, waits up to `wait` for the answer and prints it, control characters escaped.
/// Returns the exit code: 0; 1 when none answered or the job ended first; 2 when the folder
/// is refused, or no launcher matches, or several do without RUN_ID.
int ask_for_stacks(const std::string& dir, const std::optional<std::string>& run_id,
                   std::chrono::milliseconds wait);

}  // namespace xlaunch::diagnose
