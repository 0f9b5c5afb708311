/* Workload for the off-CPU tests: threads with known waits, each in a function of its own name.
 *   "sleeper": sleeps 200 ms in sleep_200ms()
 *   "reader":  blocks in wait_on_pipe() reading a pipe until "writer" writes to it 300 ms after the
 *              read began (write_after_300ms() sleeps until then)
 *   "spinner": spins 500 ms of its own CPU time in spin_500ms()
 * At the end it prints how long each wait took by CLOCK_MONOTONIC ("sleep_200ms 200123456"): a
 * busy machine (or a preempted VM) may wake a thread late, and that lateness is off-CPU time too.
 * The blocking system calls are made from those functions directly (inline syscall), not through
 * libc's wrappers: a wrapper without a frame pointer would hide its caller from a frame-pointer
 * callchain, and the test looks for these names on the blocked stacks. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int fds[2];
/* CLOCK_MONOTONIC ns just before the reader blocks: the writer writes 300 ms after it. */
static volatile uint64_t read_start_ns;
static volatile unsigned long sink;
/* Measured waits, ns: sleep_200ms, wait_on_pipe, write_after_300ms. */
static uint64_t measured[3];
static uint64_t monotonic_ns(void);

static long raw_syscall3(long nr, long a, long b, long c) {
#if defined(__x86_64__)
  long ret;
  __asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
  return ret;
#else
  return syscall(nr, a, b, c);
#endif
}

static long raw_syscall4(long nr, long a, long b, long c, long d) {
#if defined(__x86_64__)
  long ret;
  register long r10 __asm__("r10") = d;
  __asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
  return ret;
#else
  return syscall(nr, a, b, c, d);
#endif
}

/* Inlined into each named function, so the user frame of the blocked stack is that function. */
#define NANOSLEEP_MS(ms)                                                                  \
  do {                                                                                    \
    struct timespec ts_ = {(ms) / 1000, ((ms) % 1000) * 1000000L};                         \
    while (raw_syscall3(SYS_nanosleep, (long)&ts_, (long)&ts_, 0) != 0) {                  \
    }                                                                                     \
  } while (0)

__attribute__((noinline)) void sleep_200ms(void) {
  uint64_t t0 = monotonic_ns();
  NANOSLEEP_MS(200);
  measured[0] = monotonic_ns() - t0;
  __asm__ volatile("" ::: "memory");
}

static uint64_t monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) void wait_on_pipe(void) {
  char c;
  uint64_t t0 = monotonic_ns();
  __atomic_store_n(&read_start_ns, t0, __ATOMIC_SEQ_CST);
  raw_syscall3(SYS_read, fds[0], (long)&c, 1);
  measured[1] = monotonic_ns() - t0;
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void write_after_300ms(uint64_t deadline_ns) {
  struct timespec ts = {(time_t)(deadline_ns / 1000000000u), (long)(deadline_ns % 1000000000u)};
  uint64_t t0 = monotonic_ns();
  while (raw_syscall4(SYS_clock_nanosleep, CLOCK_MONOTONIC, TIMER_ABSTIME, (long)&ts, 0) != 0) {
  }
  measured[2] = monotonic_ns() - t0;
  char c = 'x';
  raw_syscall3(SYS_write, fds[1], (long)&c, 1);
  __asm__ volatile("" ::: "memory");
}

/* The clock read from spin_500ms itself, as a system call (the vDSO has no fast path for a
 * thread's CPU clock): through libc's clock_gettime, whose code keeps no frame pointer, a sample
 * taken during the read had a callchain without spin_500ms. Where system calls are slow (a VM
 * that traps them) those samples were 5% of the spin, and the test found 472 of its 500 ms. */
__attribute__((always_inline)) static inline uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  raw_syscall3(SYS_clock_gettime, CLOCK_THREAD_CPUTIME_ID, (long)&ts, 0);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* 500 ms of this thread's CPU time, however long the machine makes it wait for a CPU. */
__attribute__((noinline)) void spin_500ms(void) {
  uint64_t end = thread_cpu_ns() + 500000000u;
  while (thread_cpu_ns() < end) {
    /* about a millisecond between reads: the reads stay a small part of the spin */
    for (int i = 0; i < 1000000; i++) sink += (unsigned long)i;
  }
}

static void* sleeper(void* arg) {
  (void)arg;
  prctl(PR_SET_NAME, "sleeper");
  sleep_200ms();
  return 0;
}

static void* reader(void* arg) {
  (void)arg;
  prctl(PR_SET_NAME, "reader");
  wait_on_pipe();
  return 0;
}

static void* writer(void* arg) {
  (void)arg;
  prctl(PR_SET_NAME, "writer");
  uint64_t start;
  while ((start = __atomic_load_n(&read_start_ns, __ATOMIC_SEQ_CST)) == 0) sched_yield();
  write_after_300ms(start + 300000000u);
  return 0;
}

static void* spinner(void* arg) {
  (void)arg;
  prctl(PR_SET_NAME, "spinner");
  spin_500ms();
  return 0;
}

int main(void) {
  if (pipe(fds) != 0) return 1;
  pthread_t t[4];
  void* (*fns[4])(void*) = {sleeper, reader, writer, spinner};
  /* The waiting threads run SCHED_FIFO when allowed (root): woken, they get a CPU at once, so
   * their off-CPU time is their wait and not also the queueing of a busy machine. */
  pthread_attr_t fifo;
  pthread_attr_init(&fifo);
  pthread_attr_setinheritsched(&fifo, PTHREAD_EXPLICIT_SCHED);
  pthread_attr_setschedpolicy(&fifo, SCHED_FIFO);
  struct sched_param prio = {.sched_priority = 10};
  pthread_attr_setschedparam(&fifo, &prio);
  for (int i = 0; i < 4; i++) {
    if (fns[i] == spinner || pthread_create(&t[i], &fifo, fns[i], 0) != 0) {
      if (pthread_create(&t[i], 0, fns[i], 0) != 0) return 1;
    }
  }
  for (int i = 0; i < 4; i++) pthread_join(t[i], 0);
  printf("sleep_200ms %llu\nwait_on_pipe %llu\nwrite_after_300ms %llu\n", (unsigned long long)measured[0],
         (unsigned long long)measured[1], (unsigned long long)measured[2]);
  return 0;
}
