// Benchmark workload for bench/make_recordings.sh: several threads that keep every CPU busy
// inside deep, varied call stacks, so that a `perf record -g` of it yields large callchains
// (many frames per sample) from many distinct return addresses.
//
// Usage: workload [threads] [seconds] [max_depth]
// Built with -O1 -fno-omit-frame-pointer -fno-inline so that every level is a real frame the
// kernel's frame-pointer unwinder sees.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile int g_stop;
static int g_max_depth = 100;

typedef uint64_t (*step_fn)(uint64_t state, int depth);

static uint64_t descend(uint64_t state, int depth);

// A little real work at the leaf so that samples land in a few different functions.
__attribute__((noinline)) static uint64_t leaf_mix(uint64_t x) {
  for (int i = 0; i < 2000; ++i) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
  return x;
}

__attribute__((noinline)) static uint64_t leaf_sqrt(uint64_t x) {
  double acc = (double)(x & 0xffff);
  for (int i = 0; i < 500; ++i) acc = acc * 0.999 + 1.0 / (1.0 + acc);
  return x ^ (uint64_t)acc;
}

// Several distinct functions per level, picked by the state, so the stacks are not all alike.
#define STEP(name, k)                                                   \
  __attribute__((noinline)) static uint64_t name(uint64_t s, int depth) { \
    s = s * 2862933555777941757ULL + (k);                               \
    uint64_t r = descend(s, depth + 1);                                 \
    return r + (k);                                                     \
  }
STEP(step_a, 1)
STEP(step_b, 3)
STEP(step_c, 5)
STEP(step_d, 7)
STEP(step_e, 11)
STEP(step_f, 13)
STEP(step_g, 17)
STEP(step_h, 19)

static const step_fn kSteps[] = {step_a, step_b, step_c, step_d, step_e, step_f, step_g, step_h};

__attribute__((noinline)) static uint64_t descend(uint64_t state, int depth) {
  // Stop somewhere between max_depth/2 and max_depth.
  int limit = g_max_depth / 2 + (int)((state >> 40) % (uint64_t)(g_max_depth / 2 + 1));
  if (depth >= limit) return (state & 1) ? leaf_mix(state) : leaf_sqrt(state);
  return kSteps[(state >> 33) & 7](state, depth);
}

static void* worker(void* arg) {
  uint64_t state = (uint64_t)(uintptr_t)arg * 0x9e3779b97f4a7c15ULL + 1;
  uint64_t sink = 0;
  while (!g_stop) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    sink += descend(state, 0);
  }
  return (void*)(uintptr_t)sink;
}

int main(int argc, char** argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 4;
  double seconds = argc > 2 ? atof(argv[2]) : 5.0;
  if (argc > 3) g_max_depth = atoi(argv[3]);
  if (threads < 1) threads = 1;
  if (g_max_depth < 2) g_max_depth = 2;
  pthread_t* tids = calloc((size_t)threads, sizeof *tids);
  for (int i = 0; i < threads; ++i) pthread_create(&tids[i], NULL, worker, (void*)(uintptr_t)(i + 1));
  struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
  nanosleep(&ts, NULL);
  g_stop = 1;
  uint64_t total = 0;
  for (int i = 0; i < threads; ++i) {
    void* r;
    pthread_join(tids[i], &r);
    total += (uint64_t)(uintptr_t)r;
  }
  printf("workload: %d threads, %.1f s, max depth %d, checksum %llx\n", threads, seconds, g_max_depth,
         (unsigned long long)total);
  free(tids);
  return 0;
}
