// Process control for workers. The only launcher file that forks, signals and reaps
// (process_posix.cpp implements it).
#pragma once

#include <signal.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/containment.hpp"

namespace xlaunch::launcher {

struct SpawnSpec {
  std::vector<std::string> argv;  // argv[0]: absolute executable path
  std::vector<std::string> envp;  // "KEY=VALUE"
  int stdout_fd = 1;              // becomes the child's fd 1
  int stderr_fd = 2;              // becomes the child's fd 2
  /// Write end of a close-on-exec pipe: the child writes a StartFailure (spawn_protocol.hpp)
  /// there when it cannot run the program; end of file on the read end means it runs.
  int status_fd = -1;
  /// False: the process stays out of the run's cgroup (the preloading template, which
  /// outlives attempts; each rank it forks joins the cgroup itself).
  bool in_run_cgroup = true;
};

/// Starts a worker through the run's spawner (spawner.hpp): in its own process group (so a
/// terminal's Ctrl-C reaches only the launcher, which decides), killed by SIGKILL when the
/// launcher dies (PR_SET_PDEATHSIG, checked against the race where the launcher died before
/// it was set), in the run's cgroup or PID namespace (worker_placement()), with default
/// signal dispositions and mask, stdin from /dev/null and no other inherited descriptor.
/// The worker is this process's child. Returns its pid (= its process group id) once it
/// exists; whether it then runs the program, `status_fd` tells. Throws std::system_error
/// when no process could be made (clone's errno), std::runtime_error when the spawner is
/// gone or did not answer in time. Blocks until the spawner answers: call from the thread
/// that reaps children, so none is reaped before its pid is known.
long spawn_worker(const SpawnSpec& spec);

/// spawn_worker in two halves, so that the launcher prepares the next rank while the
/// spawner makes this one. request_worker sends the request (the spawner holds its own
/// copies of the descriptors from then on); await_worker answers the oldest request not yet
/// answered, as spawn_worker would have. A child reaped between the two may be the new one,
/// whose pid is not known yet: keep its exit until it is.
void request_worker(const SpawnSpec& spec);
long await_worker();

/// fork() without running any atfork handler, for a child that makes only system calls
/// until it execs or exits: a library's handler may allocate, which the child of a process
/// with threads must not. `extra_flags` adds clone flags (CLONE_PARENT). Returns as fork().
long fork_bare(unsigned long extra_flags = 0);

/// fork_bare, the child born in the cgroup `cgroup_dir_fd` (clone3 with CLONE_INTO_CGROUP,
/// Linux 5.7): no move afterwards (WorkerPlacement::born_in_cgroup says why). -1 with errno
/// as clone3 sets it: ENOSYS (or EPERM from a seccomp filter) where the kernel or a
/// container has no clone3, EACCES/EBUSY/EOPNOTSUPP where the cgroup refuses.
long fork_into_cgroup(int cgroup_dir_fd, unsigned long extra_flags = 0);

/// Sends `signal` to a whole process group; a group that is gone already is fine.
void signal_group(long pgid, int signal);
/// Whether process group `pgid` has a member (one this process may not signal included).
bool group_exists(long pgid);
/// Whether a process (a zombie included) has pid `pid`.
bool process_exists(long pid);

/// Opens /dev/null on whichever of fds 0, 1, 2 is closed, so that no pipe, socket or log
/// opened later takes a standard descriptor's number. Call first thing.
void reserve_standard_fds();

/// Restores SIGCHLD's default action if it was inherited as ignored (exec keeps an ignored
/// disposition; Python's subprocess does not restore it): then the kernel reaps every child
/// at once and waitpid has no status to give, which the launcher's probes and its
/// supervision need. Call first thing; workers get the default anyway.
void restore_default_sigchld();

/// The signals that stop a job.
inline constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

/// Blocks SIGINT, SIGTERM, SIGHUP and SIGQUIT for the calling thread (they stay pending).
void hold_stop_signals();
/// Ignores those signals from now on, discarding any pending one.
void ignore_stop_signals();
/// Those of them this process ignores now: read before any handler is installed, the ones
/// ignored since exec (nohup ignores SIGHUP; a shell without job control ignores SIGINT
/// and SIGQUIT for a background command).
std::vector<int> ignored_stop_signals();
/// Unblocks them for the calling thread; a pending one is delivered now.
void release_stop_signals();
/// Makes `signal` pending for the calling thread, which holds stop signals: it takes effect
/// at release_stop_signals.
void keep_pending(int signal);
/// A stop signal held pending now (one this process does not ignore), left pending: how a
/// wait that cannot take a handler (the multi-machine join) learns of a Ctrl-C.
std::optional<int> pending_stop_signal();

/// Holds stop signals for the calling thread while it lives (and for threads it starts).
class StopSignalsHeld {
 public:
  StopSignalsHeld() { hold_stop_signals(); }
  ~StopSignalsHeld() { release_stop_signals(); }
  StopSignalsHeld(const StopSignalsHeld&) = delete;
  StopSignalsHeld& operator=(const StopSignalsHeld&) = delete;
};

/// Makes orphaned descendants (a worker's DataLoader processes, say) children of the
/// launcher, so they can be found and stopped at the end.
void become_child_subreaper();

/// The launcher's direct children now (workers and adopted orphans).
std::vector<long> list_children();
/// The direct children of process `pid` now (none if it is gone).
std::vector<long> list_children(long pid);
/// SIGKILLs `roots` (children of this process, not reaped yet) and all their descendants.
/// Each is stopped before its children are read, so that it forks none after; each child is
/// held by a pidfd and checked to be its parent's, so that a pid reused meanwhile is let be.
void kill_process_trees(const std::vector<long>& roots);

/// Where spawn_worker puts each new worker; GroupGuardian::start sets it for the run.
struct WorkerPlacement {
  /// Not empty: the child writes itself into this cgroup.procs before exec, so every
  /// descendant inherits the run's cgroup whatever setsid or double fork it does.
  std::string cgroup_procs;
  /// While the run's cgroup was never killed (GroupGuardian::kill_descendants), a worker is
  /// born there (clone3 with CLONE_INTO_CGROUP) instead of moving there: the first move of a
  /// while waits an RCU grace period (10-20 ms here). Not after a kill: this kernel (6.18)
  /// SIGKILLs every child born into a cgroup that cgroup.kill was used on.
  bool born_in_cgroup = false;
  /// >= 0: workers start in this PID namespace (an fd of it), where their parent (the
  /// launcher) is invisible: getppid() is 0 there. The spawner enters it for its children
  /// (a process whose next children go to another namespace cannot create threads, which
  /// the launcher needs and the spawner does not).
  int pid_namespace = -1;
  /// >= 0 (process-group containment): the guardian's socket, on which each new worker
  /// registers its own group before it runs its program (SpawnRequest::register_group).
  int group_registry = -1;
};
WorkerPlacement& worker_placement();

/// Orphan containment (containment.hpp): the mechanism that makes sure nothing a worker
/// started outlives the job, and a tiny guardian process, forked at start, that enforces it
/// when the launcher vanishes (SIGKILL included) — PR_SET_PDEATHSIG reaches only the
/// workers. It ignores terminal signals and acts when its socket from the launcher closes,
/// whatever the reason. Per mechanism, what "kill" means:
///   cgroup:        cgroup.kill on the run's cgroup (every descendant joined it), then rmdir
///   pid-namespace: the guardian is the namespace's init: kill(-1) inside it; its exit makes
///                  the kernel kill every member. It also reaps the namespace's orphans.
///   process-group: SIGKILL to every registered worker process group (escapees survive)
class GroupGuardian {
 public:
  /// Chooses the mechanism for `request` (auto: cgroup, else pid namespace, else process
  /// groups), sets it up and forks the guardian. Call before any other thread exists.
  /// Throws UsageError (exit 2) when a forced mechanism is not available. When auto falls
  /// back to process groups, prints a note saying why to stderr.
  static GroupGuardian start(ContainmentRequest request = ContainmentRequest::Auto);
  /// Forks the guardian of `request`'s first mechanism now, when that is a cgroup, and does
  /// not wait: it makes the run's cgroup and probes it while this process goes on, and
  /// start() takes it over. For the very start of `xlaunch launch` (one thread, little memory
  /// for the fork to copy). A failure here is left for start() to meet and report.
  static void start_early(ContainmentRequest request);
  /// Ends an early guardian that start() did not take over (a launch that ended before it):
  /// waits until it has removed its cgroup.
  static void end_early();
  GroupGuardian(GroupGuardian&& other) noexcept;
  GroupGuardian& operator=(GroupGuardian&&) = delete;
  /// Closes the socket: the guardian kills what is left in the containment, removes the
  /// run's cgroup and exits; waits for that.
  ~GroupGuardian();

  /// Registers a worker's process group (used by the process-group mechanism).
  void watch(long pgid);
  /// Unregisters a group found empty: its number is free, and may soon be another's.
  void forget(long pgid);
  /// The guardian's pid as the launcher sees it (it is a child of the launcher).
  long pid() const { return pid_; }
  /// "cgroup", "pid-namespace" or "process-group".
  std::string_view mechanism() const { return to_string(mechanism_); }
  /// The mechanism with where it acts, for the log: "cgroup /sys/fs/cgroup/xlaunch-...".
  std::string describe() const;

  /// What the launcher leaves if it is killed (docs/diagnose.md): when the launcher's socket
  /// closes before forget_leftovers(), the guardian removes `path`, once the run's processes
  /// are gone and only while it is the same file or folder as now (device and inode): a
  /// file, or a temporary run folder (only what xlaunch makes in it:
  /// attempt_N.rank_R.error.json, gpu.csv and preload.log). guardian_leftovers_posix.cpp.
  enum class Leftover : char { file = 'f', run_folder = 'r' };
  void remove_if_killed(const std::string& path, Leftover kind);
  /// The same for folders not made yet, so that no moment between making one and registering
  /// it leaves it behind: every folder (and all it holds) in `folder` whose name starts with
  /// `name_prefix` and that this user owns. The prefix must name this launcher alone (its
  /// pid and run id).
  void remove_named_folders_if_killed(const std::string& folder, const std::string& name_prefix);
  /// The launcher ends normally and removes its own files: the guardian forgets them.
  void forget_leftovers();

  /// SIGKILLs everything in the run's containment except the guardian: every process of
  /// the run's cgroup (and waits, up to 10 s, until it is empty), every other member of
  /// the PID namespace, or the process groups registered since the last call; then the
  /// launcher's other children (orphans it adopted as subreaper). For the end of each
  /// attempt, once its workers have been reaped; the next attempt's workers are safe.
  void kill_descendants();
  /// SIGKILLs this process's children but its helpers (the guardian, the spawner, the
  /// preloading template) and those `known` names: orphans it adopted as subreaper, and
  /// workers a failed spawner made but never named.
  void kill_unknown_children(const std::function<bool(long)>& known) const;

 private:
  GroupGuardian(Containment mechanism, long pid, int fd, std::string cgroup_dir)
      : mechanism_(mechanism), pid_(pid), fd_(fd), cgroup_dir_(std::move(cgroup_dir)) {}
  Containment mechanism_ = Containment::ProcessGroup;
  long pid_ = -1;
  int fd_ = -1;  // SOCK_SEQPACKET to the guardian
  std::string cgroup_dir_;
  std::vector<long> groups_;  // for process-group without a guardian (fork failed)
  bool active_ = true;        // false once moved from
};

struct ExitEvent {
  long pid = 0;
  std::optional<int> exit_code;
  std::optional<int> signal;
};

/// Collects every child that has ended (waitpid(-1, WNOHANG) until none is left).
std::vector<ExitEvent> reap_ended_children();

/// A pipe whose ends are close-on-exec (the child gets its end through dup2).
struct Pipe {
  int read_fd = -1;
  int write_fd = -1;
};
Pipe make_pipe();
/// Asks for a pipe of `bytes` (F_SETPIPE_SZ); a refusal (over the user's limit) leaves it as
/// it was, which is only slower.
void resize_pipe(int fd, std::size_t bytes);
/// fs.pipe-user-pages-soft (0: unlimited); the kernel's default where it cannot be read.
std::uint64_t pipe_user_pages_soft();

/// Closes a descriptor if open and sets it to -1.
void close_fd(int& fd);

/// Writes all of `data`, retrying partial writes and EINTR. False on error (EPIPE, say).
bool write_all(int fd, std::string_view data);

/// This host's name.
std::string host_name();

}  // namespace xlaunch::launcher
