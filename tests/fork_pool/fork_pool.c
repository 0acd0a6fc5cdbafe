// A thread pool like OpenBLAS's (which numpy's wheels load at import): started when the
// library loads, stopped by a pthread_atfork prepare handler, started again when next used.
// Loaded by a --preload module in test_preload.py: the template must fork ranks from it.
#include <pthread.h>

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

__attribute__((constructor)) static void load(void) {
  pthread_atfork(stop_before_fork, 0, 0);
  fork_pool_start();
}
