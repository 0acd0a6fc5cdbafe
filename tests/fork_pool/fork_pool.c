// A thread pool like OpenBLAS's (which numpy's wheels load at import): started when the
// library loads, stopped by a pthread_atfork prepare handler, started again when next used.
// Loaded by a --preload module in test_preload.py: the template must fork ranks from it.
// FORK_POOL_HANG=prepare or =child adds a fork handler that never returns, in the forking
// process or in the child; FORK_POOL_STAYS=1 makes a pool that does not stop at a fork.
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { POOL_SIZE = 2 };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static pthread_t workers[POOL_SIZE];
static int running;

static void* idle_worker(void* unused) {
  (void)unused;
  pthread_mutex_lock(&lock);
  while (running) pthread_cond_wait(&wake, &lock);
  pthread_mutex_unlock(&lock);
  return 0;
}

int fork_pool_start(void) {
  if (running) return 0;
  running = 1;
  for (int i = 0; i < POOL_SIZE; ++i)
    if (pthread_create(&workers[i], 0, idle_worker, 0) != 0) return -1;
  return POOL_SIZE;
}

static void stop_before_fork(void) {
  if (!running) return;
  pthread_mutex_lock(&lock);
  running = 0;
  pthread_cond_broadcast(&wake);
  pthread_mutex_unlock(&lock);
  for (int i = 0; i < POOL_SIZE; ++i) pthread_join(workers[i], 0);
}

static void hang(void) {
  for (;;) pause();
}

__attribute__((constructor)) static void load(void) {
  if (getenv("FORK_POOL_STAYS") == 0) pthread_atfork(stop_before_fork, 0, 0);
  const char* hang_at = getenv("FORK_POOL_HANG");
  if (hang_at != 0 && strcmp(hang_at, "prepare") == 0) pthread_atfork(hang, 0, 0);
  if (hang_at != 0 && strcmp(hang_at, "child") == 0) pthread_atfork(0, 0, hang);
  fork_pool_start();
}
