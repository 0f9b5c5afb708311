// The map layouts the off-CPU BPF program (off_cpu.bpf.c) and the recorder (off_cpu_bpf.cc) share.
#pragma once

#define TPERF_OFFCPU_STACK_DEPTH 127
#define TPERF_OFFCPU_RUNNABLE 0
#define TPERF_OFFCPU_SLEEPING 1

// One total: a thread's off-CPU time with one pair of stacks in one state.
struct tperf_offcpu_key {
  __u32 pid;           // tgid
  __u32 tid;
  __s32 kernel_stack;  // stack map ids; negative: no stack (a kernel thread has no user stack)
  __s32 user_stack;
  __u32 state;         // TPERF_OFFCPU_RUNNABLE or TPERF_OFFCPU_SLEEPING
  __u32 pad;
};

struct tperf_offcpu_total {
  __u64 ns;
  __u64 count;  // switches
};
