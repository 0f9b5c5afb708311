/* Workload for the diff tests, "before": two hot functions share the time about 2:1. Built at
 * test time as the same file name as diff_new.c, so perf diff can pair their symbols. */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

__attribute__((noinline)) static void parse(int n) {
  for (int i = 0; i < n; i++) sink += (unsigned long)i * 3;
}

__attribute__((noinline)) static void render(int n) {
  for (int i = 0; i < n; i++) sink ^= (unsigned long)i * 5;
}

int main(int argc, char** argv) {
  double end = now() + (argc > 1 ? atof(argv[1]) : 0.5);
  while (now() < end) {
    parse(20000);
    render(10000);
  }
  return 0;
}
