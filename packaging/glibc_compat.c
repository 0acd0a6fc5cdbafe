// The self-contained xlaunch links GCC 12's libstdc++.a and libgcc_eh.a, which Debian built
// against glibc 2.36, into a program linked against an older glibc (cmake/debian11-sysroot.cmake).
// Those archives call three C library symbols that older glibc lacks, and the sources call two
// more (sigabbrev_np, close_range); each is defined here only when the glibc compiled against lacks
// it, with the behaviour its callers expect. Compiled into the shipped binaries only
// (xlaunch_link_self_contained, cmake/XlaunchStatic.cmake).
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include "glibc_compat.h"

#if !__GLIBC_PREREQ(2, 32)
// glibc 2.32: libstdc++ skips atomic reference counting while this is non-zero. Zero is the
// answer that is always safe: "there may be other threads".
char __libc_single_threaded = 0;
#endif

#if !__GLIBC_PREREQ(2, 32)
#include <signal.h>

// glibc 2.32's names, without "SIG"; real-time signals have none.
const char* sigabbrev_np(int sig) {
  static const char* const names[] = {
      [SIGHUP] = "HUP",   [SIGINT] = "INT",       [SIGQUIT] = "QUIT", [SIGILL] = "ILL",
      [SIGTRAP] = "TRAP", [SIGABRT] = "ABRT",     [SIGBUS] = "BUS",   [SIGFPE] = "FPE",
      [SIGKILL] = "KILL", [SIGUSR1] = "USR1",     [SIGSEGV] = "SEGV", [SIGUSR2] = "USR2",
      [SIGPIPE] = "PIPE", [SIGALRM] = "ALRM",     [SIGTERM] = "TERM", [SIGSTKFLT] = "STKFLT",
      [SIGCHLD] = "CHLD", [SIGCONT] = "CONT",     [SIGSTOP] = "STOP", [SIGTSTP] = "TSTP",
      [SIGTTIN] = "TTIN", [SIGTTOU] = "TTOU",     [SIGURG] = "URG",   [SIGXCPU] = "XCPU",
      [SIGXFSZ] = "XFSZ", [SIGVTALRM] = "VTALRM", [SIGPROF] = "PROF", [SIGWINCH] = "WINCH",
      [SIGPOLL] = "POLL", [SIGPWR] = "PWR",       [SIGSYS] = "SYS",
  };
  if (sig <= 0 || sig >= (int)(sizeof names / sizeof names[0])) return 0;
  return names[sig];
}
#endif

#if !__GLIBC_PREREQ(2, 35)
#include <link.h>
#include <stdint.h>

// glibc 2.35's struct dl_find_object on x86_64 (no dlfo_eh_dbase, no dlfo_eh_count there).
struct dl_find_object {
  unsigned long long dlfo_flags;
  void* dlfo_map_start;
  void* dlfo_map_end;
  struct link_map* dlfo_link_map;
  void* dlfo_eh_frame;
  unsigned long long dlfo_reserved[7];
};

struct find_request {
  uintptr_t pc;
  struct dl_find_object* result;
  int found;
};

static int find_in_object(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  struct find_request* request = data;
  uintptr_t low = UINTPTR_MAX, high = 0;
  void* eh_frame = 0;
  int contains_pc = 0;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)* segment = &info->dlpi_phdr[i];
    uintptr_t start = info->dlpi_addr + segment->p_vaddr;
    if (segment->p_type == PT_LOAD) {
      uintptr_t end = start + segment->p_memsz;
      if (start < low) low = start;
      if (end > high) high = end;
      if (request->pc >= start && request->pc < end) contains_pc = 1;
    } else if (segment->p_type == PT_GNU_EH_FRAME) {
      eh_frame = (void*)start;
    }
  }
  if (!contains_pc) return 0;
  struct dl_find_object* r = request->result;
  r->dlfo_flags = 0;
  r->dlfo_map_start = (void*)low;
  r->dlfo_map_end = (void*)high;
  r->dlfo_link_map = 0;  // libgcc's unwinder reads only dlfo_eh_frame
  r->dlfo_eh_frame = eh_frame;
  request->found = 1;
  return 1;  // stops the walk
}

// glibc 2.35: libgcc's unwinder (_Unwind_Find_FDE) asks which loaded object holds a code address
// and where its PT_GNU_EH_FRAME segment is, and gives up on the exception when the answer is
// "none". dl_iterate_phdr, what libgcc used before 2.35, finds the same answer.
int _dl_find_object(void* pc, struct dl_find_object* result) {
  struct find_request request = {(uintptr_t)pc, result, 0};
  dl_iterate_phdr(find_in_object, &request);
  return request.found ? 0 : -1;
}
#endif

#if !__GLIBC_PREREQ(2, 36)
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/random.h>
#include <unistd.h>

// glibc 2.36: one of std::random_device's sources. Like glibc's, it never fails: the kernel's
// getrandom (3.17+), then /dev/urandom, else the process aborts rather than return a guess.
uint32_t arc4random(void) {
  uint32_t value;
  ssize_t n;
  do {
    n = getrandom(&value, sizeof value, 0);
  } while (n < 0 && errno == EINTR);
  if (n == (ssize_t)sizeof value) return value;
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    do {
      n = read(fd, &value, sizeof value);
    } while (n < 0 && errno == EINTR);
    close(fd);
    if (n == (ssize_t)sizeof value) return value;
  }
  abort();
}
#endif

#if !__GLIBC_PREREQ(2, 34)
#include <sys/syscall.h>
#include <unistd.h>

// glibc 2.34: a bare system call, so it stays async-signal-safe (it runs between fork and
// exec). A kernel older than 5.9 answers ENOSYS, which the caller handles.
int close_range(unsigned int first, unsigned int last, int flags) {
  return (int)syscall(__NR_close_range, first, last, flags);
}
#endif
