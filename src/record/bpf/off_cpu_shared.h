// The map layouts the off-CPU BPF program (off_cpu.bpf.c) and the recorder (off_cpu_bpf.cc) share.
#pragma once

#define TPERF_OFFCPU_STACK_DEPTH 127
#define TPERF_OFFCPU_RUNNABLE 0
#define TPERF_OFFCPU_SLEEPING 1

// One total: a thread's off-CPU time with one pair of stacks in one state.
struct tperf_offcpu_key {
  __u32 pid;           // tgid
  __u32 tid;
  __u32 state;         // TPERF_OFFCPU_RUNNABLE or TPERF_OFFCPU_SLEEPING
  __u32 pad;
  __u64 kernel_stack;  // keys of the stacks map (a hash of the stack); 0: no stack (a kernel
  __u64 user_stack;    // thread has no user stack)
};

// A stack as the stacks map holds it: leaf first, zeros after the last frame.
struct tperf_offcpu_stack {
  __u64 ips[TPERF_OFFCPU_STACK_DEPTH];
};

struct tperf_offcpu_total {
  __u64 ns;
  __u64 count;  // switches
};
