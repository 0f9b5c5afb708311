// A small program to profile with tperf or perf. Two named threads spend their time in different
// hot functions (a matrix multiply and a hash loop) a few calls deep, so callchains have shape, and
// a short child started with fork+exec adds a second process: the recording holds samples,
// COMM, FORK, EXIT and MMAP records of both. Runs about 1-2 seconds.
//
// Build: cc -O2 -g -fno-omit-frame-pointer -pthread -o workload workload.c
// Usage: workload [SCALE]   (SCALE multiplies the work, default 1)
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { kMatrixSize = 160, kHashBufferSize = 64 * 1024 };

static volatile uint64_t sink;  // keeps results alive so the optimizer does not delete the work

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

// ---- thread "compute": dense matrix multiply ----

__attribute__((noinline)) static double dot_column(const double *row, const double *b, int col, int n) {
  double sum = 0;
  for (int k = 0; k < n; ++k) sum += row[k] * b[k * n + col];
  return sum;
}

__attribute__((noinline)) static void matmul(const double *a, const double *b, double *c, int n) {
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) c[i * n + j] = dot_column(a + i * n, b, j, n);
}

static void *compute_thread(void *arg) {
  int rounds = *(const int *)arg;
  int n = kMatrixSize;
  double *a = malloc(sizeof(double) * n * n), *b = malloc(sizeof(double) * n * n), *c = malloc(sizeof(double) * n * n);
  if (!a || !b || !c) abort();
  for (int i = 0; i < n * n; ++i) {
    a[i] = (double)(i % 17) / 7.0;
    b[i] = (double)(i % 13) / 5.0;
  }
  pthread_setname_np(pthread_self(), "compute");
  for (int r = 0; r < rounds; ++r) {
    matmul(a, b, c, n);
    a[r % (n * n)] = c[(r * 7) % (n * n)] / 1e6;  // feed back so rounds are not identical
  }
  sink += (uint64_t)c[n + 1];
  free(a);
  free(b);
  free(c);
  return NULL;
}

// ---- thread "hash": FNV-1a over a buffer refilled by a mixing function ----

__attribute__((noinline)) static uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}

__attribute__((noinline)) static void refill(uint8_t *buf, size_t len, uint64_t seed) {
  for (size_t i = 0; i + 8 <= len; i += 8) {
    uint64_t v = mix64(seed + i);
    memcpy(buf + i, &v, 8);
  }
}

__attribute__((noinline)) static uint64_t fnv1a(const uint8_t *buf, size_t len) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < len; ++i) {
    h ^= buf[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

static void *hash_thread(void *arg) {
  int rounds = *(const int *)arg;
  uint8_t *buf = malloc(kHashBufferSize);
  if (!buf) abort();
  pthread_setname_np(pthread_self(), "hash");
  uint64_t h = 1;
  for (int r = 0; r < rounds; ++r) {
    refill(buf, kHashBufferSize, h);
    h = fnv1a(buf, kHashBufferSize);
  }
  sink += h;
  free(buf);
  return NULL;
}

// ---- the exec'd child: a short Collatz search ----

__attribute__((noinline)) static int collatz_steps(uint64_t x) {
  int steps = 0;
  while (x != 1) {
    x = (x & 1) ? 3 * x + 1 : x / 2;
    ++steps;
  }
  return steps;
}

static int child_main(void) {
  int best = 0;
  for (uint64_t x = 1; x < 400000; ++x) {
    int s = collatz_steps(x);
    if (s > best) best = s;
  }
  printf("child %d: longest Collatz chain below 400000 has %d steps\n", (int)getpid(), best);
  return 0;
}

static pid_t spawn_child(void) {
  // Exec the real path (not /proc/self/exe) so the child's COMM is "workload", not "exe".
  static char self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (len <= 0) {
    perror("readlink /proc/self/exe");
    exit(1);
  }
  self[len] = '\0';
  pid_t pid = fork();
  if (pid < 0) {
    perror("fork");
    exit(1);
  }
  if (pid == 0) {
    execl(self, self, "--child", (char *)NULL);
    perror(self);
    _exit(127);
  }
  return pid;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--child") == 0) return child_main();
  int scale = argc > 1 ? atoi(argv[1]) : 1;
  if (scale < 1) scale = 1;

  double t0 = now_seconds();
  int compute_rounds = 300 * scale, hash_rounds = 11000 * scale;
  pthread_t compute, hash;
  if (pthread_create(&compute, NULL, compute_thread, &compute_rounds) != 0 ||
      pthread_create(&hash, NULL, hash_thread, &hash_rounds) != 0) {
    fprintf(stderr, "pthread_create failed\n");
    return 1;
  }
  pid_t child = spawn_child();
  int status = 0;
  if (waitpid(child, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "child failed\n");
    return 1;
  }
  pthread_join(compute, NULL);
  pthread_join(hash, NULL);
  printf("workload %d: done in %.2f s (result %llu)\n", (int)getpid(), now_seconds() - t0,
         (unsigned long long)(sink & 0xffff));
  return 0;
}
