// The spawner: a process forked first thing in `xlaunch launch`, while the launcher still has
// a single thread, that makes every worker of the run (spawner_posix.cpp; the launcher's side
// is spawn_client_posix.cpp). A process that has threads must do nothing but system calls
// between fork and exec: a lock another thread held at fork time (the allocator's, the
// loader's) is never released in the child. The spawner never has a second thread, and its
// children do only system calls anyway (docs/launch.md, "How workers are started").
#pragma once

namespace xlaunch::launcher {

/// Owns the running spawner. Each worker is created with clone(CLONE_PARENT), so it is the
/// launcher's child as if the launcher had forked it: waitpid(-1), the child subreaper,
/// PR_SET_PDEATHSIG (tied to the launcher's main thread, which forked the spawner) and the
/// worker's parent check all see the launcher. spawn_worker (process.hpp) talks to it.
class Spawner {
 public:
  /// Forks the spawner. Call from the main thread before any other thread exists (before
  /// NVML is loaded: a real one may start threads). Throws LaunchError when it cannot.
  static Spawner start();
  Spawner(Spawner&& other) noexcept;
  Spawner& operator=(Spawner&&) = delete;
  /// Ends the spawner (it has nothing to clean up: SIGKILL) and reaps it.
  ~Spawner();

  long pid() const { return pid_; }

 private:
  Spawner(long pid, int fd) : pid_(pid), fd_(fd) {}
  long pid_ = -1;
  int fd_ = -1;
};

/// The running spawner's pid, or -1: the launcher's other children are leftovers to kill at
/// the end of an attempt, the spawner is not.
long spawner_pid();

/// False once the spawner failed (gone, silent, garbled) or where none runs: a process it
/// made may then never have been named to the launcher.
bool spawner_usable();

}  // namespace xlaunch::launcher
