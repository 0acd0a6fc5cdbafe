/* An LD_PRELOAD library for tests/integration/test_multi_machine_failures.py: after the first
 * rename(2) onto a path that ends with PAUSE_AFTER_RENAME, it writes that path to the file
 * named by PAUSE_MARKER and sleeps PAUSE_SECONDS (through interrupting signals), so that a
 * test can send a signal in a moment that is otherwise a few microseconds long. With
 * PAUSE_RAISE (a signal number) it then sends that signal to its own process.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int ends_with(const char* text, const char* suffix) {
  const size_t n = strlen(text), m = strlen(suffix);
  return m <= n && strcmp(text + n - m, suffix) == 0;
}

int rename(const char* from, const char* to) {
  int (*real)(const char*, const char*) =
      (int (*)(const char*, const char*))dlsym(RTLD_NEXT, "rename");
  const int result = real(from, to);
  static int paused;
  const char* suffix = getenv("PAUSE_AFTER_RENAME");
  const char* marker = getenv("PAUSE_MARKER");
  const char* seconds = getenv("PAUSE_SECONDS");
  if (result != 0 || paused || suffix == NULL || marker == NULL || seconds == NULL ||
      !ends_with(to, suffix)) {
    return result;
  }
  paused = 1;
  const int saved_errno = errno;
  char partial[4096];
  snprintf(partial, sizeof partial, "%s.tmp", marker);
  const int fd = open(partial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd >= 0) {
    const ssize_t written = write(fd, to, strlen(to));
    close(fd);
    if (written > 0) real(partial, marker); /* whole, or not at all */
  }
  struct timespec left = {atoi(seconds), 0};
  while (nanosleep(&left, &left) != 0 && errno == EINTR) {
  }
  const char* raise_signal = getenv("PAUSE_RAISE");
  if (raise_signal != NULL) kill(getpid(), atoi(raise_signal));
  errno = saved_errno;
  return result;
}
