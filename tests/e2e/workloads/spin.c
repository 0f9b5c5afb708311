/* Workload for the recording tests: two threads burn CPU for argv[1] seconds (default 0.2) in a
 * three-deep call chain, so frame-pointer and DWARF callchains have something to show and
 * samples carry two different tids. Built at test time with -O1 -g -fno-omit-frame-pointer. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

__attribute__((noinline)) static void leaf(int n) {
  for (int i = 0; i < n; i++) sink += (unsigned long)i * 7;
}

__attribute__((noinline)) static void middle(int n) {
  leaf(n);
  sink++;
}

__attribute__((noinline)) static void outer(double secs) {
  double end = now() + secs;
  while (now() < end) middle(20000);
}

static void* worker(void* arg) {
  outer(*(double*)arg);
  return NULL;
}

int main(int argc, char** argv) {
  double secs = argc > 1 ? atof(argv[1]) : 0.2;
  pthread_t t;
  if (pthread_create(&t, NULL, worker, &secs) != 0) return 1;
  outer(secs);
  pthread_join(t, NULL);
  return 0;
}
