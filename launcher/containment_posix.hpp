// What the containment files share (internal to launcher/): containment_posix.cpp probes the
// mechanisms and sets one up (GroupGuardian::start), cgroup_posix.cpp handles the run's
// cgroup, guardian_posix.cpp forks and runs the guardian and kills through it,
// guardian_leftovers_posix.cpp removes what a killed launcher leaves.
#pragma once

#include <limits.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <optional>
#include <string>

#include "launcher/containment.hpp"
#include "launcher/process.hpp"

namespace xlaunch::launcher {

// How long a kill waits for the cgroup to empty (a process tearing down GPU contexts may
// take seconds to die), and how long the launcher waits for the guardian to confirm.
inline constexpr long kKillWaitMs = 10'000;
inline constexpr long kAckWaitMs = kKillWaitMs + 5'000;

std::string errno_text(int error);

// Everything the guardian needs, prepared before fork: from then on it may only make
// async-signal-safe calls (its parent may have threads), and allocates nothing.
struct CgroupPaths {
  char dir[PATH_MAX] = {};
  char kill[PATH_MAX] = {};
  char procs[PATH_MAX] = {};
  char events[PATH_MAX] = {};
};

CgroupPaths cgroup_paths(const std::string& dir);

// --- the run's cgroup (cgroup_posix.cpp) -------------------------------------------------
// These four are async-signal-safe: the guardian and children between fork and exec call
// them.

long monotonic_ms();
bool write_text(const char* path, const char* text);
// Closes every descriptor from `first` on except `keep` (close_range; /proc/self/fd before
// Linux 5.9). Not async-signal-safe on that fallback: for single-threaded processes only
// (process_posix.cpp).
void close_from(int first, int keep);
// SIGKILLs every process in the cgroup and waits (bounded) until it is empty. cgroup.kill
// also reaches processes forked while it runs; the fallback repeats until none is left.
void kill_cgroup(const CgroupPaths& cgroup);
// rmdir, retrying while the last processes finish leaving (EBUSY).
bool remove_cgroup(const CgroupPaths& cgroup);

// Finding a place for it and checking it (the launcher only).

// Where the run's cgroup goes: a new one below the launcher's own. On success `dir` is
// its path (not created here) and detail the directory it is in.
ContainmentProbe run_cgroup_location(std::string& dir);
// Why no process can join the cgroup at `dir` (delegation, the "no internal processes"
// rule, threaded sub-trees all show there); nullopt when one can.
std::optional<std::string> cannot_join(const std::string& dir);
// Whether a child can be born in the cgroup at `dir` (clone3 with CLONE_INTO_CGROUP) and live:
// no clone3, a refusal, or a child killed at birth say no. Linux 6.18 kills a child born into
// a cgroup whose count of cgroup.kill writes differs from its parent's cgroup's: one made in a
// launcher's cgroup that was killed before (an outer xlaunch's restarted attempt) is one.
// Async-signal-safe: the guardian asks, right after making the cgroup.
bool can_be_born_in(const char* dir);
// Whether cgroup.events says no process is in the cgroup at `dir` (false when unreadable).
bool cgroup_is_empty(const std::string& dir);
// For `xlaunch env`: makes a run cgroup and checks that a process can join it. On
// success `dir` is the new cgroup, which the caller removes.
ContainmentProbe make_run_cgroup(std::string& dir);

// Runs `body` in a forked child and returns its result: 0, or an errno. `body` may make
// system calls only (fork_bare: the parent may have threads).
template <typename Body>
int in_child(Body body) {
  const auto pid = static_cast<pid_t>(fork_bare());
  if (pid == 0) ::_exit(body() & 0xff);
  if (pid < 0) return errno;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return errno;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return EINTR;
}

// --- the guardian (guardian_posix.cpp) ---------------------------------------------------

struct StartedGuardian {
  long pid = -1;  // -1: not running; `failure` says why
  int fd = -1;
  std::string failure;
  bool born_in_cgroup = false;  // workers can be born in the run's cgroup (can_be_born_in)
};

// A guardian forked, its answer not read yet.
struct ForkedGuardian {
  long pid = -1;  // -1: fork failed; `failure` says why
  int fd = -1;
  std::string failure;
};
// Forks the guardian. For the cgroup mechanism it makes the cgroup and asks whether workers can
// be born there (can_be_born_in) while this process goes on.
ForkedGuardian launch_guardian(Containment mechanism, const CgroupPaths& cgroup);
// Waits for a forked guardian's "ready" (for the cgroup mechanism: the cgroup made and probed).
StartedGuardian await_guardian(ForkedGuardian forked, Containment mechanism,
                               const CgroupPaths& cgroup);
// Both at once.
StartedGuardian fork_guardian(Containment mechanism, const CgroupPaths& cgroup);
// Reaps child `pid` (signals do not cut the wait short); its wait status, 0 if already gone.
int wait_for(long pid);

// --- what a killed launcher leaves (guardian_leftovers_posix.cpp) ------------------------

// GroupGuardian::remove_if_killed and forget_leftovers send one of these (its size tells it
// from the 4-byte kill and process-group messages).
inline constexpr char kLeftoverTag[4] = {'L', 'E', 'F', 'T'};
struct LeftoverMessage {
  char tag[4] = {'L', 'E', 'F', 'T'};
  char kind = 0;  // GroupGuardian::Leftover, or 'x': forget them all
  std::uint64_t dev = 0;
  std::uint64_t ino = 0;
  char path[PATH_MAX] = {};
};
// In the guardian, async-signal-safe: keeps a registration (or forgets them all); false
// when `message` is not one.
bool note_leftover(const char* message, std::size_t size);
// In the guardian, once the run's processes are gone: removes what is still registered.
void remove_leftovers();

}  // namespace xlaunch::launcher
