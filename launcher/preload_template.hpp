// The preloading template process of this machine (docs/launch.md, "Preloading"): started
// through the spawner, it imports the modules once, answers whether it can fork ranks, and
// then forks each rank the launcher asks for. The launcher (a child subreaper) adopts each
// rank as its own child: supervision is the same as for a rank the spawner made.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "launcher/process.hpp"

namespace xlaunch::launcher {

class PreloadTemplate {
 public:
  /// Starts the template with `argv` and `envp` (preload_plan.hpp); its own output goes to
  /// `stderr_fd`. Returns once the process exists; the imports go on in it. Throws
  /// std::runtime_error when no process could be made.
  static std::unique_ptr<PreloadTemplate> start(const std::vector<std::string>& argv,
                                                const std::vector<std::string>& envp,
                                                int stderr_fd);
  ~PreloadTemplate();  // ends and reaps the template
  PreloadTemplate(const PreloadTemplate&) = delete;
  PreloadTemplate& operator=(const PreloadTemplate&) = delete;

  long pid() const { return pid_; }
  /// Readable once the template has answered (or is gone): then call read_answer().
  int answer_fd() const { return fd_; }
  /// The template's answer: "" when it is ready to fork ranks, else why it is not (an import
  /// that failed, a thread a module started, ...). Blocks until it comes.
  std::string read_answer();
  /// Starts a rank: spawn_worker's contract, the process forked from the template, with
  /// XLAUNCH_PRELOAD_TEMPLATE=<its pid> added to the environment. Throws std::runtime_error
  /// when the template is gone or does not answer.
  long spawn(const SpawnSpec& spec);
  /// The launcher reaped it (it died): its pid is not to be signalled or waited for again.
  void mark_reaped();

 private:
  PreloadTemplate(long pid, int fd) : pid_(pid), fd_(fd) {}
  long pid_ = -1;
  int fd_ = -1;
  bool reaped_ = false;
};

/// The running template's pid, or -1: the end of an attempt leaves it alone.
long preload_template_pid();

}  // namespace xlaunch::launcher
