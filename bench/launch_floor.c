/* The floor under `xlaunch launch` for bench/launch_floor.py (compiled by it with `cc -O2`;
 * not part of the build): forks N children that each exec PROGRAM ARGS..., then waits for
 * all of them. No pipes, no environment changes: the least any launcher has to do.
 *
 *   launch_floor N PROGRAM [ARGS...]
 *
 * Exits 0 when every child exited 0, 1 otherwise (126 printed as an exec failure).
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s N PROGRAM [ARGS...]\n", argv[0]);
    return 2;
  }
  int n = atoi(argv[1]);
  for (int i = 0; i < n; ++i) {
    pid_t pid = fork();
    if (pid < 0) {
      perror("fork");
      return 1;
    }
    if (pid == 0) {
      execv(argv[2], argv + 2);
      _exit(126);
    }
  }
  int failed = 0;
  for (int i = 0; i < n; ++i) {
    int status = 0;
    if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) failed = 1;
  }
  return failed;
}
