/* An LD_PRELOAD library for tests/integration/test_killed_launcher.py: after a mkdtemp(3)
 * whose result holds the text in PAUSE_AFTER_MKDTEMP, it writes the folder's path to the
 * file named by PAUSE_MARKER and sleeps until it is killed, so that a test can kill a
 * launcher in the moment between making a folder and telling anyone about it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char* mkdtemp(char* template_path) {
  char* (*real)(char*) = (char* (*)(char*))dlsym(RTLD_NEXT, "mkdtemp");
  char* made = real(template_path);
  const char* pattern = getenv("PAUSE_AFTER_MKDTEMP");
  const char* marker = getenv("PAUSE_MARKER");
  if (made == NULL || pattern == NULL || marker == NULL || strstr(made, pattern) == NULL) {
    return made;
  }
  char partial[4096];
  strncpy(partial, marker, sizeof partial - 5);
  partial[sizeof partial - 5] = '\0';
  strcat(partial, ".tmp");
  const int fd = open(partial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd >= 0) {
    const ssize_t written = write(fd, made, strlen(made));
    close(fd);
    if (written > 0) rename(partial, marker); /* whole, or not at all */
  }
  for (;;) sleep(60);
}
