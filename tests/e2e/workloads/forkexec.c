/* Workload for the record tests: a known number of forks, execs and exits.
 *   forkexec N [STATUS]  forks N children one after the other; each re-executes this binary as
 *                        "forkexec child", burns ~3 ms of CPU in a two-deep call chain and exits 0;
 *                        the parent waits for each, burns a little itself, and exits with STATUS.
 * So a recording of it holds N FORKs from the parent, N + 1 exec COMMs and N + 1 EXITs. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

__attribute__((noinline)) static void leaf(int n) {
  for (int i = 0; i < n; i++) sink += (unsigned long)i * 3;
}

__attribute__((noinline)) static void burn(double secs) {
  double end = now() + secs;
  while (now() < end) leaf(5000);
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "child") == 0) {
    burn(0.003);
    return 0;
  }
  int n = argc > 1 ? atoi(argv[1]) : 10;
  int status = argc > 2 ? atoi(argv[2]) : 0;
  for (int i = 0; i < n; i++) {
    pid_t pid = fork();
    if (pid < 0) return 100;
    if (pid == 0) {
      char* args[] = {argv[0], (char*)"child", NULL};
      execv("/proc/self/exe", args);
      _exit(101);
    }
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return 102;
  }
  burn(0.02);
  return status;
}
