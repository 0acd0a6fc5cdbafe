#include "diagnose/stacks_target.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <sys/syscall.h>

#include <catch2/catch.hpp>

using namespace xlaunch::diagnose;

namespace {
// A Python 3.11 process with faulthandler registered for SIGURG (23) and SIGINT caught.
constexpr std::string_view kPython =
    "Name:\tpython3\nNSpid:\t4242\nSigQ:\t0/96365\nSigPnd:\t0000000000000000\n"
    "ShdPnd:\t0000000000000000\nSigBlk:\t0000000000000000\nSigIgn:\t0000000001001000\n"
    "SigCgt:\t0000000100400002\nCapInh:\t0000000000000000\n";
// The same pid after exec("sleep"): nothing caught.
constexpr std::string_view kSleep =
    "Name:\tsleep\nNSpid:\t4242\t7\nSigIgn:\t0000000000000000\nSigCgt:\t0000000000000000\n";
}  // namespace

TEST_CASE("SigCgt says which signals a process handles", "[stacks]") {
  CHECK(catches_signal(kPython, SIGURG));
  CHECK(catches_signal(kPython, SIGINT));
  CHECK_FALSE(catches_signal(kPython, SIGUSR1));
  CHECK_FALSE(catches_signal(kSleep, SIGURG));
  CHECK_FALSE(catches_signal("Name:\tx\nSigCgt:\tzz\n", SIGURG));  // malformed: no
  CHECK_FALSE(catches_signal("Name:\tx\n", SIGURG));
  CHECK_FALSE(catches_signal(kPython, 0));
  CHECK(catches_signal("x\nSigCgt:\t8000000000000000\n", 64));
}

TEST_CASE("a worker's own pid is the last of NSpid", "[stacks]") {
  CHECK(own_pid(kPython) == 4242);
  CHECK(own_pid(kSleep) == 7);  // inside a PID namespace
  CHECK_FALSE(own_pid("Name:\tx\n"));
}

TEST_CASE("the descriptor note and the reasons a rank is not asked", "[stacks]") {
  CHECK(parse_descriptor_note("960\n") == 960);
  CHECK_FALSE(parse_descriptor_note("x"));
  CHECK_FALSE(parse_descriptor_note("-1"));
  CHECK(missing_text(DumpTarget::ready).empty());
  CHECK(missing_text(DumpTarget::not_python) == "stacks not available: not a Python worker");
  CHECK(missing_text(DumpTarget::no_handler).find("exec") != std::string::npos);
  CHECK(missing_text(DumpTarget::file_closed).find("closed its descriptors") != std::string::npos);
}

TEST_CASE("a thread's system call is read from /proc/PID/task/TID/syscall", "[stacks]") {
  // Blocked in poll(fds, 1, 1000): the number, six arguments, the stack and program pointers.
  const auto poll = blocked_in_syscall("7 0x7ffd1c0 0x1 0x3e8 0x0 0x0 0x0 0x7ffd1b8 0x7f3a2c1\n");
  REQUIRE(poll);
  CHECK(poll->number == 7);
  CHECK(poll->arg0 == 0x7ffd1c0);
  CHECK(poll->arg1 == 1);
  CHECK(blocked_in_syscall("running\n") == std::nullopt);
  CHECK(blocked_in_syscall("-1 0x7ffd1b8 0x7f3a2c1\n") == std::nullopt);  // not in a call
  CHECK(blocked_in_syscall("") == std::nullopt);
  CHECK(blocked_in_syscall("7x 0x1 0x2\n") == std::nullopt);
  CHECK(blocked_in_syscall("7 1 0x2\n") == std::nullopt);
}

TEST_CASE("only the waits the kernel resumes unseen are safe to interrupt", "[stacks]") {
  // ppoll, pselect6, epoll_pwait, sigtimedwait, sigsuspend, io_getevents, nanosleep; read,
  // write, recvfrom, accept, connect (a socket with SO_RCVTIMEO ends with EINTR, a write
  // returns what it wrote); restart_syscall (a poll or sleep resumed after SIGSTOP); a call
  // not known here. In this machine's numbers, as /proc shows them.
  for (long number : {long{SYS_ppoll}, long{SYS_pselect6}, long{SYS_epoll_pwait},
                      long{SYS_rt_sigtimedwait}, long{SYS_rt_sigsuspend}, long{SYS_io_getevents},
                      long{SYS_nanosleep}, long{SYS_read}, long{SYS_write}, long{SYS_recvfrom},
                      long{SYS_accept}, long{SYS_connect}, long{SYS_restart_syscall}, 9999L}) {
    CHECK(cut_short_by_a_signal({number, 0, 0, 0, 0}));
  }
  // wait4, waitid; a futex wait without a timeout (a mutex, a condition variable).
  for (long number : {long{SYS_wait4}, long{SYS_waitid}, long{SYS_futex}}) {
    CHECK_FALSE(cut_short_by_a_signal({number, 0, 0, 0, 0}));
  }
  // A futex wait with a timeout (sem_timedwait) ends with EINTR.
  CHECK(cut_short_by_a_signal(*blocked_in_syscall(fmt::format(
      "{} 0x7f31c8 0x189 0x0 0x7ffd2a0 0x0 0xffffffff 0x7ffd1b8 0x7f3a2c1\n", SYS_futex))));
  CHECK_FALSE(cut_short_by_a_signal(*blocked_in_syscall(
      fmt::format("{} 0x7f31c8 0x80 0x0 0x0 0x0 0x0 0x7ffd1b8 0x7f3a2c1\n", SYS_futex))));
  // clock_nanosleep: a relative sleep (torch 1.13 between connects: CLOCK_REALTIME, 0) ends
  // early; one until an absolute time (Python 3.11's time.sleep: CLOCK_MONOTONIC,
  // TIMER_ABSTIME) is called again.
  CHECK(cut_short_by_a_signal(*blocked_in_syscall(
      fmt::format("{} 0x0 0x0 0x7ffe2d3b6ee0 0x0 0x0 0x0\n", SYS_clock_nanosleep))));
  CHECK_FALSE(cut_short_by_a_signal(*blocked_in_syscall(
      fmt::format("{} 0x1 0x1 0x7fffce0321a0 0x0 0x0\n", SYS_clock_nanosleep))));
}

TEST_CASE("State T or t in /proc/PID/status is a stopped process", "[stacks]") {
  CHECK(stopped_state("Name:\tpython3\nUmask:\t0022\nState:\tT (stopped)\nTgid:\t7\n"));
  CHECK(stopped_state("Name:\tpython3\nState:\tt (tracing stop)\n"));
  CHECK_FALSE(stopped_state("Name:\tpython3\nState:\tS (sleeping)\n"));
  CHECK_FALSE(stopped_state("Name:\tT\nState:\tR (running)\n"));  // the name is no state
  CHECK_FALSE(stopped_state("Name:\tpython3\n"));
  CHECK_THAT(missing_text(DumpTarget::stopped),
             Catch::Contains("stacks not taken: it is stopped (SIGSTOP, Ctrl-Z or a debugger"));
}
