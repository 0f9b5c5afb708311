/* Workload for the report tests: a thread, a fork whose child execs this program again, and
 * four hot loops at known addresses. Built static and stripped at test time, so that perf has no
 * symbols for it either and both tools print the same addresses. */
#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void spin(unsigned long n) {
  for (unsigned long i = 0; i < n; i++) sink += i * 7;
}

__attribute__((noinline)) static void spin2(unsigned long n) {
  for (unsigned long i = 0; i < n; i++) sink += i * 3;
}

__attribute__((noinline)) static void* worker(void* a) {
  spin(30000000UL);
  spin2(10000000UL);
  return a;
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "child") == 0) {
    spin(20000000UL);
    return 0;
  }
  pthread_t t;
  if (pthread_create(&t, 0, worker, 0) != 0) return 1;
  spin(20000000UL);
  pid_t p = fork();
  if (p == 0) {
    spin2(10000000UL);
    execl("/proc/self/exe", argv[0], "child", (char*)0);
    _exit(1);
  }
  waitpid(p, 0, 0);
  pthread_join(t, 0);
  spin(10000000UL);
  return 0;
}
