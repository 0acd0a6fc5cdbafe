/* An LD_PRELOAD library that catches the bug "a child of a multithreaded process allocates
 * before exec": POSIX allows only async-signal-safe calls there, because a lock another
 * thread held at fork time (the allocator's, for one) is never released in the child.
 *
 * It interposes the heap (malloc, calloc, realloc, reallocarray, free, posix_memalign,
 * aligned_alloc, memalign, valloc, pvalloc) and learns about every new process: fork() and
 * anything else that runs pthread_atfork handlers, _Fork(), and syscall(SYS_clone/clone3)
 * without CLONE_VM. A child made while its parent had more than one thread is "unsafe"
 * until it execs (exec replaces this library's state); each heap call there is reported.
 *
 * Reports go, one line each and written with write(2) only, to the file named by
 * FORK_DETECTOR_LOG (appended; nothing is reported without it):
 *   load <pid> <exe>                           the library runs in this process
 *   fork <pid> threads <n>                     a process with n > 1 threads made a child
 *   heap <call> child <pid> of <ppid> threads <n> caller 0x<address>
 * The heap calls go straight to glibc's own allocator (__libc_malloc and friends), so the
 * library works in any process of an uninstrumented build (ASan owns malloc in its builds).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

extern void* __libc_malloc(size_t);
extern void* __libc_calloc(size_t, size_t);
extern void* __libc_realloc(void*, size_t);
extern void __libc_free(void*);
extern void* __libc_memalign(size_t, size_t);
extern void* __libc_valloc(size_t);
extern void* __libc_pvalloc(size_t);

static int log_fd = -1;
static int threads_at_fork = 1; /* the parent's thread count at its last fork */
static int unsafe_child;        /* this process is such a child and has not exec'd */
static long parent_pid;

/* --- text without the heap or stdio --------------------------------------------------- */

struct line {
  char text[512];
  size_t size;
};

static void put(struct line* l, const char* s) {
  while (*s != '\0' && l->size < sizeof(l->text) - 1) l->text[l->size++] = *s++;
}

static void put_number(struct line* l, unsigned long value, unsigned base) {
  char digits[32];
  int n = 0;
  do {
    digits[n++] = "0123456789abcdef"[value % base];
    value /= base;
  } while (value != 0);
  while (n > 0 && l->size < sizeof(l->text) - 1) l->text[l->size++] = digits[--n];
}

static void emit(struct line* l) {
  if (log_fd < 0) return;
  l->text[l->size++] = '\n';
  const int saved = errno;
  (void)syscall(SYS_write, log_fd, l->text, l->size); /* O_APPEND: one line per write */
  errno = saved;
}

/* Threads of this process: entries of /proc/self/task, read with raw system calls. */
static int count_threads(void) {
  const int saved = errno;
  int fd =
      (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return 1;
  int count = 0;
  char buffer[4096] __attribute__((aligned(8)));
  long n;
  while ((n = syscall(SYS_getdents64, fd, buffer, sizeof buffer)) > 0) {
    for (long offset = 0; offset < n;) {
      const struct dirent64* entry = (const struct dirent64*)(buffer + offset);
      if (entry->d_name[0] != '.') ++count;
      offset += entry->d_reclen;
    }
  }
  syscall(SYS_close, fd);
  errno = saved;
  return count > 0 ? count : 1;
}

/* --- learning about new processes ----------------------------------------------------- */

static void before_fork(void) {
  threads_at_fork = count_threads();
  if (threads_at_fork > 1) {
    struct line l = {.size = 0};
    put(&l, "fork ");
    put_number(&l, (unsigned long)syscall(SYS_getpid), 10);
    put(&l, " threads ");
    put_number(&l, (unsigned long)threads_at_fork, 10);
    emit(&l);
  }
}

static void in_child(void) {
  parent_pid = syscall(SYS_getppid);
  if (threads_at_fork > 1) unsafe_child = 1;
}

__attribute__((constructor)) static void start(void) {
  const char* path = NULL;
  extern char** environ;
  for (char** e = environ; e != NULL && *e != NULL; ++e) {
    if (strncmp(*e, "FORK_DETECTOR_LOG=", 18) == 0) path = *e + 18;
  }
  if (path != NULL) {
    log_fd =
        (int)syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  }
  pthread_atfork(before_fork, NULL, in_child);
  struct line l = {.size = 0};
  char exe[256];
  long n = syscall(SYS_readlink, "/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  put(&l, "load ");
  put_number(&l, (unsigned long)syscall(SYS_getpid), 10);
  put(&l, " ");
  put(&l, exe);
  emit(&l);
}

/* _Fork (glibc 2.34) runs no atfork handlers. */
pid_t _Fork(void) {
  static pid_t (*real)(void);
  if (real == NULL) real = (pid_t(*)(void))dlsym(RTLD_NEXT, "_Fork");
  if (real == NULL) {
    errno = ENOSYS;
    return -1;
  }
  before_fork();
  pid_t pid = real();
  if (pid == 0) in_child();
  return pid;
}

/* Raw clone system calls bypass fork(); those without CLONE_VM make a process like fork. */
long syscall(long number, ...) {
  static long (*real)(long, ...);
  va_list args;
  va_start(args, number);
  long a[6];
  for (int i = 0; i < 6; ++i) a[i] = va_arg(args, long);
  va_end(args);
  if (real == NULL) real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
  int new_process = 0;
  if (number == SYS_clone) new_process = (a[0] & (CLONE_VM | CLONE_THREAD)) == 0;
#ifdef SYS_clone3
  if (number == SYS_clone3 && a[0] != 0) {
    const uint64_t flags = *(const uint64_t*)a[0]; /* struct clone_args starts with flags */
    new_process = (flags & (CLONE_VM | CLONE_THREAD)) == 0;
  }
#endif
  if (new_process) before_fork();
  long result = real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
  if (new_process && result == 0) in_child();
  return result;
}

/* --- the heap -------------------------------------------------------------------------- */

static void report(const char* call, void* caller) {
  if (!unsafe_child) return;
  struct line l = {.size = 0};
  put(&l, "heap ");
  put(&l, call);
  put(&l, " child ");
  put_number(&l, (unsigned long)syscall(SYS_getpid), 10);
  put(&l, " of ");
  put_number(&l, (unsigned long)parent_pid, 10);
  put(&l, " threads ");
  put_number(&l, (unsigned long)threads_at_fork, 10);
  put(&l, " caller 0x");
  put_number(&l, (unsigned long)(uintptr_t)caller, 16);
  emit(&l);
}

#define CALLER __builtin_return_address(0)

void* malloc(size_t size) {
  report("malloc", CALLER);
  return __libc_malloc(size);
}

void* calloc(size_t count, size_t size) {
  report("calloc", CALLER);
  return __libc_calloc(count, size);
}

void* realloc(void* pointer, size_t size) {
  report("realloc", CALLER);
  return __libc_realloc(pointer, size);
}

void* reallocarray(void* pointer, size_t count, size_t size) {
  report("reallocarray", CALLER);
  size_t total;
  if (__builtin_mul_overflow(count, size, &total)) {
    errno = ENOMEM;
    return NULL;
  }
  return __libc_realloc(pointer, total);
}

void free(void* pointer) {
  if (pointer != NULL) report("free", CALLER);
  __libc_free(pointer);
}

int posix_memalign(void** out, size_t alignment, size_t size) {
  report("posix_memalign", CALLER);
  if (alignment < sizeof(void*) || (alignment & (alignment - 1)) != 0) return EINVAL;
  void* p = __libc_memalign(alignment, size);
  if (p == NULL) return ENOMEM;
  *out = p;
  return 0;
}

void* aligned_alloc(size_t alignment, size_t size) {
  report("aligned_alloc", CALLER);
  return __libc_memalign(alignment, size);
}

void* memalign(size_t alignment, size_t size) {
  report("memalign", CALLER);
  return __libc_memalign(alignment, size);
}

void* valloc(size_t size) {
  report("valloc", CALLER);
  return __libc_valloc(size);
}

void* pvalloc(size_t size) {
  report("pvalloc", CALLER);
  return __libc_pvalloc(size);
}
