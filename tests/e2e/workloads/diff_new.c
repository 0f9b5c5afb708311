/* Workload for the diff tests, "after": render got cheaper and a new function, compress, takes
 * a share of the time (it is in this version only). Built under the same file name as
 * diff_old.c. */
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

__attribute__((noinline)) static void compress(int n) {
  for (int i = 0; i < n; i++) sink += sink >> 3;
}

int main(int argc, char** argv) {
  double end = now() + (argc > 1 ? atof(argv[1]) : 0.5);
  while (now() < end) {
    parse(20000);
    render(3000);
    compress(8000);
  }
  return 0;
}
