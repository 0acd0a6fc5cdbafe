/* What NVML costs a launch, on this machine: each call xlaunch makes, timed in fresh
 * processes, and two whole sequences as a launch runs them:
 *   two sessions  discovery (init, queries, shutdown, dlclose), then the sampler's own
 *                 (dlopen, init, a reading at the start and one at the end, shutdown)
 *   one session   one init: discovery, then the same two readings, no shutdown (exit)
 * For each: the time until workers could be started (discovery done, sampler open) and the
 * time until the parent's waitpid returns (the process's exit included: the kernel closes
 * the driver's descriptors there). Median (min, max) of --reps fresh processes, in ms.
 * Also prints the process's thread count after nvmlInit.
 * Build: cc -O2 -o nvml_cost nvml_cost.c -ldl. A benchmark, not a test. */
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef int (*fn0)(void);
typedef int (*fn_u)(unsigned*);
typedef int (*fn_handle)(unsigned, void**);
typedef int (*fn_text)(void*, char*, unsigned);
typedef int (*fn_ptr)(void*, void*);
typedef int (*fn_cc)(void*, int*, int*);
typedef int (*fn_driver)(char*, unsigned);
typedef int (*fn_procs)(void*, unsigned*, void*);

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

enum { kCalls = 14, kSeqs = 2, kOut = kCalls + 2 * kSeqs + 1 };
static const char* call_names[kCalls] = {
    "dlopen",    "init",     "count",      "handle",         "uuid",
    "name",      "memory",   "capability", "driver version", "utilization",
    "processes", "shutdown", "init again", "shutdown again"};

static void* lib;
static fn0 init, shutdown_;
static fn_u count;
static fn_handle handle;
static fn_text uuid, name;
static fn_ptr memory, utilization;
static fn_cc capability;
static fn_driver driver;
static fn_procs procs;

static void load(void) {
  lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) _exit(3);
  init = (fn0)dlsym(lib, "nvmlInit_v2");
  shutdown_ = (fn0)dlsym(lib, "nvmlShutdown");
  count = (fn_u)dlsym(lib, "nvmlDeviceGetCount_v2");
  handle = (fn_handle)dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
  uuid = (fn_text)dlsym(lib, "nvmlDeviceGetUUID");
  name = (fn_text)dlsym(lib, "nvmlDeviceGetName");
  memory = (fn_ptr)dlsym(lib, "nvmlDeviceGetMemoryInfo");
  utilization = (fn_ptr)dlsym(lib, "nvmlDeviceGetUtilizationRates");
  capability = (fn_cc)dlsym(lib, "nvmlDeviceGetCudaComputeCapability");
  driver = (fn_driver)dlsym(lib, "nvmlSystemGetDriverVersion");
  procs = (fn_procs)dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v3");
}

static int threads(void) {
  DIR* d = opendir("/proc/self/task");
  int n = 0;
  for (struct dirent* e; d && (e = readdir(d));) n += e->d_name[0] != '.';
  if (d) closedir(d);
  return n;
}

static void discover(double* ms) {
  char text[96];
  unsigned long long mem[3];
  unsigned n = 0;
  double t = now_ms();
  count(&n);
  if (ms) ms[2] = now_ms() - t;
  for (unsigned i = 0; i < n; ++i) {
    void* d = 0;
    int major, minor;
    t = now_ms();
    handle(i, &d);
    if (ms && i == 0) ms[3] = now_ms() - t;
    t = now_ms();
    uuid(d, text, sizeof text);
    if (ms && i == 0) ms[4] = now_ms() - t;
    t = now_ms();
    name(d, text, sizeof text);
    if (ms && i == 0) ms[5] = now_ms() - t;
    t = now_ms();
    memory(d, mem);
    if (ms && i == 0) ms[6] = now_ms() - t;
    t = now_ms();
    capability(d, &major, &minor);
    if (ms && i == 0) ms[7] = now_ms() - t;
  }
  t = now_ms();
  driver(text, sizeof text);
  if (ms) ms[8] = now_ms() - t;
}

static void reading(double* ms) {
  void* d = 0;
  unsigned long long mem[3];
  unsigned util[2];
  unsigned char buffer[64 * 24];
  unsigned n = 64;
  handle(0, &d);
  memory(d, mem);
  double t = now_ms();
  utilization(d, util);
  if (ms) ms[9] = now_ms() - t;
  t = now_ms();
  procs(d, &n, buffer);
  if (ms) ms[10] = now_ms() - t;
}

/* Mode 0: every call once, timed. Modes 1, 2: the sequences; writes "ready" time. */
static void child(int mode, int fd, double start) {
  double out[kOut] = {0};
  if (mode == 0) {
    double t = now_ms();
    load();
    out[0] = now_ms() - t;
    t = now_ms();
    if (init() != 0) _exit(4);
    out[1] = now_ms() - t;
    out[kOut - 1] = threads();
    discover(out);
    reading(out);
    t = now_ms();
    shutdown_();
    out[11] = now_ms() - t;
    t = now_ms();
    init();
    out[12] = now_ms() - t;
    t = now_ms();
    shutdown_();
    out[13] = now_ms() - t;
  } else if (mode == 1) { /* two sessions */
    load();
    if (init() != 0) _exit(4);
    discover(NULL);
    shutdown_();
    dlclose(lib);
    load();
    init();
    out[0] = now_ms() - start;
    reading(NULL);
    reading(NULL);
    shutdown_();
    dlclose(lib);
  } else { /* one session, left to exit */
    load();
    if (init() != 0) _exit(4);
    discover(NULL);
    out[0] = now_ms() - start;
    reading(NULL);
    reading(NULL);
  }
  if (write(fd, out, sizeof out) != (ssize_t)sizeof out) _exit(5);
  _exit(0);
}

static int by_value(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static void show(const char* label, double* v, int reps) {
  qsort(v, (size_t)reps, sizeof(double), by_value);
  printf("  %-28s %8.2f (%.2f, %.2f)\n", label, v[reps / 2], v[0], v[reps - 1]);
}

int main(int argc, char** argv) {
  int reps = argc > 2 && strcmp(argv[1], "--reps") == 0 ? atoi(argv[2]) : 11;
  if (reps < 1 || reps > 1000) reps = 11;
  double* calls = calloc((size_t)reps * kCalls, sizeof(double));
  double* ready = calloc((size_t)reps * kSeqs, sizeof(double));
  double* done = calloc((size_t)reps * kSeqs, sizeof(double));
  int thread_count = 0;
  for (int r = 0; r < reps; ++r) {
    for (int mode = 0; mode <= kSeqs; ++mode) {
      int p[2];
      if (pipe(p) != 0) return 1;
      double start = now_ms();
      pid_t pid = fork();
      if (pid == 0) child(mode, p[1], start);
      close(p[1]);
      double out[kOut];
      ssize_t got = read(p[0], out, sizeof out);
      close(p[0]);
      int status = 0;
      waitpid(pid, &status, 0);
      double end = now_ms();
      if (got != (ssize_t)sizeof out) {
        fprintf(stderr, "nvml_cost: mode %d failed (status %d)\n", mode, status);
        return 1;
      }
      if (mode == 0) {
        for (int c = 0; c < kCalls; ++c) calls[c * reps + r] = out[c];
        thread_count = (int)out[kOut - 1];
      } else {
        ready[(mode - 1) * reps + r] = out[0];
        done[(mode - 1) * reps + r] = end - start;
      }
    }
  }
  printf("NVML, median (min, max) of %d fresh processes, ms; %d thread(s) after nvmlInit\n", reps,
         thread_count);
  for (int c = 0; c < kCalls; ++c) show(call_names[c], calls + c * reps, reps);
  const char* seqs[kSeqs] = {"two sessions", "one session, no shutdown"};
  char label[64];
  for (int s = 0; s < kSeqs; ++s) {
    snprintf(label, sizeof label, "%s: ready", seqs[s]);
    show(label, ready + s * reps, reps);
    snprintf(label, sizeof label, "%s: reaped", seqs[s]);
    show(label, done + s * reps, reps);
  }
  return 0;
}
