/* Workload for the JIT-map tests: acts like a tiny JIT. It writes two hand-assembled x86-64
 * functions into anonymous executable memory, names them in /tmp/perf-PID.map the way JITs do
 * for perf, and runs them for argv[1] seconds (default 0.3). Prints its pid, so the test can find
 * and remove the map file. Anonymous memory gets no symbols any other way: whatever names the
 * samples there must have come from the map file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The clock through the system call, not the vDSO: with `perf record -N` perf cannot read the
 * recording's [vdso] and shows its samples as [unknown] where tperf names them (it reads the
 * running kernel's vDSO), and the tests compare only what both can know. */
static double now(void) {
  struct timespec ts;
  syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* mov ecx, COUNT; 1: dec ecx; jnz 1b; ret */
static void emit_loop(unsigned char* at, unsigned count) {
  const unsigned char code[] = {0xb9, 0, 0, 0, 0, 0xff, 0xc9, 0x75, 0xfc, 0xc3};
  memcpy(at, code, sizeof code);
  memcpy(at + 1, &count, 4);
}

int main(int argc, char** argv) {
#if defined(__x86_64__)
  double secs = argc > 1 ? atof(argv[1]) : 0.3;
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  unsigned char* code = mmap(NULL, page, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (code == MAP_FAILED) return 2;
  memset(code, 0xcc, page);
  /* Two functions with gaps around them: the gap bytes are never run, and the second one runs
   * three times longer, so both names show up with different counts. */
  emit_loop(code + 0x40, 20000);
  emit_loop(code + 0x100, 60000);
  char path[64];
  snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
  FILE* map = fopen(path, "w");
  if (!map) return 3;
  fprintf(map, "%lx a jit_alpha_loop\n", (unsigned long)(code + 0x40));
  fprintf(map, "%lx a jit_beta_loop[v2] (tier 1)\n", (unsigned long)(code + 0x100));
  fclose(map);
  printf("%d\n", (int)getpid());
  fflush(stdout);
  void (*alpha)(void) = (void (*)(void))(code + 0x40);
  void (*beta)(void) = (void (*)(void))(code + 0x100);
  double end = now() + secs;
  while (now() < end) {
    alpha();
    beta();
  }
  return 0;
#else
  (void)argc;
  (void)argv;
  return 77;
#endif
}
