/* Tiny worker for bench/launch_bench.py (compiled by it with `cc -O2`; not part of the build).
 *
 *   launch_worker fail DIR DELAY_MS CODE
 *       Every rank writes its pid to DIR/pid.RANK. Rank 0 then sleeps DELAY_MS (so that every
 *       sibling is running), writes CLOCK_REALTIME in ns to DIR/fail_ns and _exit(CODE)s right
 *       away. Other ranks sleep 60 s (default SIGTERM disposition: they die on SIGTERM).
 *   launch_worker sleep DIR MS
 *       Writes DIR/pid.RANK, sleeps MS, exits 0.
 *   launch_worker print BYTES LINE_LEN
 *       Writes BYTES bytes to stdout as lines of LINE_LEN bytes (newline included). With
 *       $PRINT_TIME_FILE set, then writes there how long that took, in ns, from the first
 *       byte to the last one flushed: the worker's own time, without any launcher's start.
 *   launch_worker true
 *       Exits 0.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void write_file_path(const char* path, long long value) {
  char buf[64];
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    perror(path);
    _exit(97);
  }
  int n = snprintf(buf, sizeof buf, "%lld\n", value);
  if (write(fd, buf, (size_t)n) != n) {
    perror(path);
    _exit(97);
  }
  close(fd);
}

static void write_file(const char* dir, const char* name, long long value) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  write_file_path(path, value);
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static void write_pid(const char* dir) {
  const char* rank = getenv("RANK");
  char name[64];
  snprintf(name, sizeof name, "pid.%s", rank ? rank : "x");
  write_file(dir, name, (long long)getpid());
}

int main(int argc, char** argv) {
  if (argc >= 2 && strcmp(argv[1], "true") == 0) return 0;
  if (argc == 5 && strcmp(argv[1], "fail") == 0) {
    write_pid(argv[2]);
    const char* rank = getenv("RANK");
    if (rank && strcmp(rank, "0") == 0) {
      sleep_ms(atol(argv[3]));
      struct timespec now;
      clock_gettime(CLOCK_REALTIME, &now);
      write_file(argv[2], "fail_ns", (long long)now.tv_sec * 1000000000LL + now.tv_nsec);
      _exit(atoi(argv[4]));
    }
    sleep_ms(60000);
    return 0;
  }
  if (argc == 4 && strcmp(argv[1], "sleep") == 0) {
    write_pid(argv[2]);
    sleep_ms(atol(argv[3]));
    return 0;
  }
  if (argc == 4 && strcmp(argv[1], "print") == 0) {
    long long total = atoll(argv[2]);
    int len = atoi(argv[3]);
    if (len < 2 || len > 65536) return 2;
    static char buf[1 << 16];
    setvbuf(stdout, buf, _IOFBF, sizeof buf);
    char* line = malloc((size_t)len);
    for (int i = 0; i < len - 1; i++) line[i] = (char)('a' + i % 26);
    line[len - 1] = '\n';
    long long written = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (written < total) {
      size_t n = (size_t)((total - written < len) ? total - written : len);
      if (fwrite(line, 1, n, stdout) != n) return 1;
      written += (long long)n;
    }
    if (fflush(stdout) != 0) return 1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    const char* times = getenv("PRINT_TIME_FILE");
    if (times) {
      write_file_path(times, (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL +
                                 (t1.tv_nsec - t0.tv_nsec));
    }
    return 0;
  }
  fprintf(stderr, "usage: see the comment at the top of bench/launch_worker.c\n");
  return 2;
}
