// Whether a rank may be sent the dump signal right now (docs/diagnose.md, "What xlaunch may
// signal"): only while its program is the Python process that registered faulthandler
// (the kernel's SigCgt mask shows a handler for the signal) and the descriptor it dumps to
// is still xlaunch's dump file (same device and inode). The pure checks are here; reading
// /proc and sending are in stacks_target_posix.cpp.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace xlaunch::diagnose {

/// Whether /proc/PID/status text says the process has a handler for `signal` (SigCgt).
/// False when the line is missing or malformed.
bool catches_signal(std::string_view proc_status, int signal);

/// Whether /proc/PID/status text says the process is stopped: SIGSTOP, Ctrl-Z or a debugger
/// (State T or t). A signal to it waits until it continues.
bool stopped_state(std::string_view proc_status);

/// The descriptor number a worker's .fd note names ("960\n"); nullopt when malformed.
std::optional<int> parse_descriptor_note(std::string_view text);

/// The pid a process sees for itself, from /proc/PID/status text: the last of its NSpid
/// line (in a PID namespace, the worker's os.getpid(), which names its files); nullopt when
/// the line is missing.
std::optional<long> own_pid(std::string_view proc_status);

/// A system call a thread is blocked in: its number and first four arguments.
struct BlockedCall {
  long number = 0;
  unsigned long long arg0 = 0;
  unsigned long long arg1 = 0;
  unsigned long long arg2 = 0;
  unsigned long long arg3 = 0;
};

/// The call a thread is blocked in, from /proc/PID/task/TID/syscall text ("7 0x... ...");
/// nullopt when it runs ("running"), waits outside a system call ("-1 ..."), or the text is
/// malformed.
std::optional<BlockedCall> blocked_in_syscall(std::string_view text);

/// Whether a handler that runs while a thread is blocked in this call (x86_64 numbers) may
/// change what the call returns, so that code which does not expect it fails (torch 1.13's
/// store client, between its connect attempts). Only the waits the kernel resumes unseen
/// under SA_RESTART are safe: a futex wait without a timeout (a mutex, a condition
/// variable, Python's lock.acquire()), wait4 and waitid; and a sleep until an absolute time
/// (clock_nanosleep with TIMER_ABSTIME, Python 3.11+'s time.sleep), which ends with EINTR
/// but is made to be called again, as Python does. Everything else is not: poll, select,
/// epoll_wait and relative sleeps end with EINTR; so do a futex wait with a timeout
/// (sem_timedwait), a socket call on a socket with SO_RCVTIMEO or SO_SNDTIMEO (torch's
/// store client sets them) and restart_syscall (a sleep or poll resumed after SIGSTOP or a
/// debugger); a blocking write returns what it wrote so far.
bool cut_short_by_a_signal(const BlockedCall& call);

enum class DumpTarget {
  ready,            // send
  not_python,       // no faulthandler of ours was ever registered (no .fd note)
  no_handler,       // it no longer catches the signal: exec'd another program, unregistered
  file_closed,      // the descriptor is gone or now another file: it closed its descriptors
  ended,            // the process is gone
  would_cut_short,  // every thread waits in a call the signal would cut short: not sent
  threads_unseen,   // the threads' calls cannot be read (no ptrace access): not sent
  stopped,          // stopped (SIGSTOP, Ctrl-Z, a debugger): the dump would wait; not sent
};

/// The report's text for a rank that was not asked ("stacks not available: ...").
std::string missing_text(DumpTarget why);

/// A rank's process: `pid` as the launcher sees it, `own_pid` as it sees itself (they differ
/// in a PID namespace; its files are named with the latter).
struct RankProcess {
  int rank = 0;
  long pid = 0;
  long own_pid = 0;
};

/// Checks a rank's process right before a request (stacks_target_posix.cpp).
DumpTarget check_dump_target(const std::string& stacks_dir, const RankProcess& rank);

/// Sends the dump signal when check_dump_target says ready, to one thread that it cannot
/// cut short (cut_short_by_a_signal): one blocked in a call the kernel restarts, else one
/// that runs. None: would_cut_short, and nothing is sent; nor where the threads' calls
/// cannot be read (/proc/PID/task/TID/syscall needs ptrace access): threads_unseen.
DumpTarget request_dump(const std::string& stacks_dir, const RankProcess& rank);

/// `pid`'s own pid (own_pid above), read now; `pid` itself when it cannot be read.
long read_own_pid(long pid);

/// For the launcher itself, first thing: SIGRTMIN+4, the dump signal of earlier versions
/// (which a user may still send it), does nothing, rather than end the launcher and leave
/// its workers to the guardian. A handler, not SIG_IGN, which workers would inherit.
void survive_old_dump_signal();

}  // namespace xlaunch::diagnose
