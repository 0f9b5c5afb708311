/* Recursion through ten functions to a depth of 10 to 29, and through libc's qsort (whose
 * comparison calls back in), built with -O2 and without frame pointers: the DWARF unwinding
 * tests need deep stacks whose every frame only .eh_frame can walk. */
#include <stdlib.h>
#include <time.h>

volatile unsigned long sink;
void f0(int d);
#define F(n, m)                                                  \
  __attribute__((noinline)) void f##n(int d) {                   \
    if (d <= 0) {                                                \
      for (int i = 0; i < 200; i++) sink += (unsigned long)i * d; \
      return;                                                    \
    }                                                            \
    if (d & 1)                                                   \
      f##m(d - 1);                                               \
    else                                                         \
      f0(d - 1);                                                 \
    sink++;                                                      \
  }
F(9, 0) F(8, 9) F(7, 8) F(6, 7) F(5, 6) F(4, 5) F(3, 4) F(2, 3) F(1, 2)

static int depth_left;
static int cmp(const void* a, const void* b) {
  if (depth_left > 0) {
    --depth_left;
    f1(depth_left % 7);
  }
  return *(const int*)a - *(const int*)b;
}

__attribute__((noinline)) void f0(int d) {
  if (d <= 0) {
    for (int i = 0; i < 300; i++) sink += i;
    return;
  }
  switch (d % 5) {
    case 0: f1(d - 1); break;
    case 1: f3(d - 1); break;
    case 2: f5(d - 1); break;
    case 3: f7(d - 1); break;
    default: f9(d - 1);
  }
}

/* Runs for argv[1] seconds of CPU time (a count of iterations made the recording's size follow
 * the machine's speed: 105 samples where the test wants 200 on a fast one). */
int main(int argc, char** argv) {
  double secs = argc > 1 ? atof(argv[1]) : 1;
  const clock_t until = clock() + (clock_t)(secs * CLOCKS_PER_SEC);
  int v[16];
  for (long i = 0; i % 256 != 0 || clock() < until; i++) {
    f0(10 + (int)(i % 20));
    if (i % 64 == 0) {
      for (int k = 0; k < 16; k++) v[k] = (int)((i * 7 + k * 13) % 31);
      depth_left = 8;
      qsort(v, 16, sizeof v[0], cmp);
    }
  }
  return (int)(sink & 1);
}
