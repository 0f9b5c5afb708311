/* Two threads ping-ponging one byte through a pair of pipes: every round trip is two blocking
 * reads, so two context switches or more. Prints the round trips per second it managed.
 *   pingpong [ROUND_TRIPS] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int ping[2], pong[2];
static long rounds = 200000;

static void* responder(void* arg) {
  (void)arg;
  char c;
  for (long i = 0; i < rounds; i++) {
    if (read(ping[0], &c, 1) != 1 || write(pong[1], &c, 1) != 1) exit(1);
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1) rounds = atol(argv[1]);
  if (pipe(ping) != 0 || pipe(pong) != 0) return 1;
  pthread_t t;
  pthread_create(&t, 0, responder, 0);
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  char c = 'x';
  for (long i = 0; i < rounds; i++) {
    if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1) return 1;
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  pthread_join(t, 0);
  double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
  printf("%ld round trips in %.3f s: %.0f/s\n", rounds, s, (double)rounds / s);
  return 0;
}
