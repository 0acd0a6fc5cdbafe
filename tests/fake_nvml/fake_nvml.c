/* A fake libnvidia-ml.so.1 for tests on machines without a GPU: it implements the NVML
 * functions xlaunch calls and serves readings scripted in the file that
 * XLAUNCH_FAKE_NVML_SCRIPT names, read again on every call so a test may change it.
 *
 *   gpu INDEX UUID UTIL[,UTIL...] MEM_USED MEM_TOTAL   one line per GPU, in index order;
 *                                                      utilization cycles through the list
 *   procs_dir DIR     each file DIR/<gpu>-<pid> lists <pid> as a compute process on <gpu>,
 *                     holding the number of bytes the file contains (0 if empty)
 *   calls FILE        nvmlInit_v2 and nvmlShutdown append a line each to FILE:
 *                       init threads=T children=C   the caller's threads and child processes
 *                       thread blocked=SIGNALS      the stop signals the thread init started
 *                                                   (as the real NVML does) has blocked
 *                       shutdown
 *
 * Build: cc -shared -fPIC -o libnvidia-ml.so.1 fake_nvml.c  */
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_GPUS 16
#define UTIL_STEPS 32

struct fake_gpu {
  char uuid[96];
  unsigned util[UTIL_STEPS];
  unsigned util_count;
  unsigned long long used, total;
};

static struct fake_gpu gpus[MAX_GPUS];
static unsigned gpu_count;
static char procs_dir[512];
static char calls_path[512];
static unsigned reads[MAX_GPUS];

static int load(void) {
  const char* path = getenv("XLAUNCH_FAKE_NVML_SCRIPT");
  FILE* f = path ? fopen(path, "r") : NULL;
  char line[1024];
  gpu_count = 0;
  procs_dir[0] = '\0';
  calls_path[0] = '\0';
  if (!f) return 1;
  while (fgets(line, sizeof line, f)) {
    unsigned index;
    char uuid[96], utils[512];
    unsigned long long used, total;
    if (sscanf(line, "gpu %u %95s %511s %llu %llu", &index, uuid, utils, &used, &total) == 5 &&
        index < MAX_GPUS) {
      struct fake_gpu* g = &gpus[index];
      strcpy(g->uuid, uuid);
      g->used = used;
      g->total = total;
      g->util_count = 0;
      for (char* p = strtok(utils, ","); p && g->util_count < UTIL_STEPS; p = strtok(NULL, ","))
        g->util[g->util_count++] = (unsigned)atoi(p);
      if (index + 1 > gpu_count) gpu_count = index + 1;
    } else if (sscanf(line, "procs_dir %511s", procs_dir) != 1) {
      sscanf(line, "calls %511s", calls_path);
    }
  }
  fclose(f);
  return 0;
}

typedef struct {
  unsigned index;
} * device_t;
static struct { unsigned index; } handles[MAX_GPUS];

static void log_to(const char* path, const char* text) {
  FILE* f = path[0] ? fopen(path, "a") : NULL;
  if (!f) return;
  fputs(text, f);
  fclose(f);
}

static void log_call(const char* text) { log_to(calls_path, text); }

static int count_entries(const char* dir) {
  DIR* d = opendir(dir);
  int n = 0;
  for (struct dirent* e; d && (e = readdir(d)) != NULL;) n += e->d_name[0] != '.';
  if (d) closedir(d);
  return n;
}

static int count_children(void) {
  char path[64], text[4096];
  snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
  FILE* f = fopen(path, "r");
  int n = 0;
  if (f) {
    size_t got = fread(text, 1, sizeof text - 1, f);
    text[got] = '\0';
    for (char* word = strtok(text, " \n"); word; word = strtok(NULL, " \n")) ++n;
    fclose(f);
  }
  return n;
}

/* Like the real NVML's thread: started by init, ended and joined by shutdown. */
static pthread_t thread;
static int thread_running, thread_stopping;
static char thread_calls_path[512]; /* calls_path as init saw it: load() rewrites that one */
static pthread_mutex_t thread_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t thread_wake = PTHREAD_COND_INITIALIZER;

static void* nvml_thread(void* unused) {
  static const struct {
    int signal;
    const char* name;
  } stop[] = {{SIGINT, "INT"}, {SIGTERM, "TERM"}, {SIGHUP, "HUP"}, {SIGQUIT, "QUIT"}};
  sigset_t mask;
  char line[128] = "thread blocked=";
  (void)unused;
  pthread_sigmask(SIG_BLOCK, NULL, &mask);
  for (unsigned i = 0; i < sizeof stop / sizeof stop[0]; ++i) {
    if (!sigismember(&mask, stop[i].signal)) continue;
    strcat(line, stop[i].name);
    strcat(line, ",");
  }
  strcat(line, "\n");
  log_to(thread_calls_path, line);
  pthread_mutex_lock(&thread_mutex);
  while (!thread_stopping) pthread_cond_wait(&thread_wake, &thread_mutex);
  pthread_mutex_unlock(&thread_mutex);
  return NULL;
}

int nvmlInit_v2(void) {
  if (load() != 0) return 9; /* NVML_ERROR_DRIVER_NOT_LOADED */
  char line[128];
  snprintf(line, sizeof line, "init threads=%d children=%d\n", count_entries("/proc/self/task"),
           count_children());
  log_call(line);
  thread_stopping = 0;
  memcpy(thread_calls_path, calls_path, sizeof calls_path);
  thread_running = pthread_create(&thread, NULL, nvml_thread, NULL) == 0;
  return 0;
}
int nvmlShutdown(void) {
  log_call("shutdown\n");
  if (thread_running) {
    pthread_mutex_lock(&thread_mutex);
    thread_stopping = 1;
    pthread_cond_signal(&thread_wake);
    pthread_mutex_unlock(&thread_mutex);
    pthread_join(thread, NULL);
    thread_running = 0;
  }
  return 0;
}
int nvmlSystemGetDriverVersion(char* out, unsigned size) {
  snprintf(out, size, "fake-1.0");
  return 0;
}
int nvmlDeviceGetCount_v2(unsigned* count) {
  load();
  *count = gpu_count;
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned index, device_t* device) {
  load();
  if (index >= gpu_count) return 2; /* NVML_ERROR_INVALID_ARGUMENT */
  handles[index].index = index;
  *device = (device_t)&handles[index];
  return 0;
}
int nvmlDeviceGetName(device_t d, char* out, unsigned size) {
  snprintf(out, size, "Fake GPU %u", d->index);
  return 0;
}
int nvmlDeviceGetUUID(device_t d, char* out, unsigned size) {
  snprintf(out, size, "%s", gpus[d->index].uuid);
  return 0;
}
int nvmlDeviceGetCudaComputeCapability(device_t d, int* major, int* minor) {
  (void)d;
  *major = 9;
  *minor = 0;
  return 0;
}
struct memory {
  unsigned long long total, free, used;
};
int nvmlDeviceGetMemoryInfo(device_t d, struct memory* m) {
  load();
  m->total = gpus[d->index].total;
  m->used = gpus[d->index].used;
  m->free = m->total > m->used ? m->total - m->used : 0;
  return 0;
}
struct utilization {
  unsigned gpu, memory;
};
int nvmlDeviceGetUtilizationRates(device_t d, struct utilization* u) {
  load();
  const struct fake_gpu* g = &gpus[d->index];
  u->gpu = g->util_count ? g->util[reads[d->index]++ % g->util_count] : 0;
  u->memory = u->gpu / 2;
  return 0;
}
struct process_info {
  unsigned pid;
  unsigned long long used;
  unsigned gpu_instance, compute_instance;
};
int nvmlDeviceGetComputeRunningProcesses_v3(device_t d, unsigned* count, struct process_info* out) {
  unsigned n = 0;
  load();
  DIR* dir = procs_dir[0] ? opendir(procs_dir) : NULL;
  if (dir) {
    struct dirent* e;
    while ((e = readdir(dir)) != NULL) {
      unsigned gpu, pid;
      char path[1024];
      unsigned long long bytes = 0;
      if (sscanf(e->d_name, "%u-%u", &gpu, &pid) != 2 || gpu != d->index) continue;
      snprintf(path, sizeof path, "%s/%s", procs_dir, e->d_name);
      FILE* f = fopen(path, "r");
      if (f) {
        if (fscanf(f, "%llu", &bytes) != 1) bytes = 0;
        fclose(f);
      }
      if (n < *count) {
        out[n].pid = pid;
        out[n].used = bytes;
        out[n].gpu_instance = out[n].compute_instance = 0xFFFFFFFFu;
      }
      ++n;
    }
    closedir(dir);
  }
  if (n > *count) {
    *count = n;
    return 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
  }
  *count = n;
  return 0;
}
