/* A fake libnvidia-ml.so.1 for tests on machines without a GPU: it implements the NVML
 * functions xlaunch calls and serves readings scripted in the file that
 * XLAUNCH_FAKE_NVML_SCRIPT names, read again on every call so a test may change it.
 *
 *   gpu INDEX UUID UTIL[,UTIL...] MEM_USED MEM_TOTAL   one line per GPU, in index order;
 *                                                      utilization cycles through the list
 *   procs_dir DIR     each file DIR/<gpu>-<pid> lists <pid> as a compute process on <gpu>,
 *                     holding the number of bytes the file contains (0 if empty)
 *
 * Build: cc -shared -fPIC -o libnvidia-ml.so.1 fake_nvml.c  */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
static unsigned reads[MAX_GPUS];

static int load(void) {
  const char* path = getenv("XLAUNCH_FAKE_NVML_SCRIPT");
  FILE* f = path ? fopen(path, "r") : NULL;
  char line[1024];
  gpu_count = 0;
  procs_dir[0] = '\0';
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
    } else {
      sscanf(line, "procs_dir %511s", procs_dir);
    }
  }
  fclose(f);
  return 0;
}

typedef struct {
  unsigned index;
} * device_t;
static struct { unsigned index; } handles[MAX_GPUS];

int nvmlInit_v2(void) { return load() == 0 ? 0 : 9; /* NVML_ERROR_DRIVER_NOT_LOADED */ }
int nvmlShutdown(void) { return 0; }
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
