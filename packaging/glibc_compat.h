// Declarations the sources take from glibc 2.34+, for the self-contained build compiled against
// an older glibc (cmake/debian11-sysroot.cmake). Force-included (-include) into every file of
// that build by cmake/XlaunchStatic.cmake; the definitions are in glibc_compat.c.
#pragma once
#include <features.h>

#if defined(__GLIBC__) && defined(__x86_64__)
// glibc 2.29 gave exp, exp2, log, log2 and pow new versions (without SVID error handling), which
// a link against 2.31 picks. The 2.2.5 versions compute the same values and keep the floor
// below 2.29 (docs/install.md).
__asm__(".symver exp,exp@GLIBC_2.2.5");
__asm__(".symver exp2,exp2@GLIBC_2.2.5");
__asm__(".symver log,log@GLIBC_2.2.5");
__asm__(".symver log2,log2@GLIBC_2.2.5");
__asm__(".symver pow,pow@GLIBC_2.2.5");
#endif

#ifdef __cplusplus
#include <bits/c++config.h>
// libstdc++ waits for a steady_clock deadline with pthread_cond_clockwait (glibc 2.30) and
// locks with a timeout through pthread_*_clocklock (2.30) when its build found them. Without,
// it converts the deadline to system_clock and uses the older timed calls, as it did before
// glibc 2.30: a step of the wall clock during such a wait lengthens or shortens it.
#undef _GLIBCXX_USE_PTHREAD_COND_CLOCKWAIT
#undef _GLIBCXX_USE_PTHREAD_MUTEX_CLOCKLOCK
#undef _GLIBCXX_USE_PTHREAD_RWLOCK_CLOCKLOCK
#endif

#if defined(__GLIBC__) && !__GLIBC_PREREQ(2, 32)
__BEGIN_DECLS
// glibc 2.32: "TERM" for SIGTERM, a null pointer for a number that names no signal.
extern const char* sigabbrev_np(int sig) __THROW;
__END_DECLS
#endif

#if defined(__GLIBC__) && !__GLIBC_PREREQ(2, 34)
#include <linux/close_range.h>
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)  // Linux 5.11
#endif
__BEGIN_DECLS
// glibc 2.34's wrapper of the close_range system call (Linux 5.9+); callers handle its failure.
extern int close_range(unsigned int first, unsigned int last, int flags) __THROW;
__END_DECLS
#endif
