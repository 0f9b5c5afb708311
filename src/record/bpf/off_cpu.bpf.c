// The BPF way of `tperf record --off-cpu`: on every context switch, the task going out (when it
// is one of the recorded tasks) is stamped with the time, its kernel and user stacks' keys and
// whether it still wants the CPU; when it comes back in, the interval is added to a total keyed by
// (process, thread, stacks, state). Everything is summed here: user space reads the totals once,
// at the end of the recording (record/off_cpu_bpf.cc).
//
// CO-RE with a few hand-written kernel types (preserve_access_index): the build needs no
// vmlinux.h; libbpf relocates the field offsets against the running kernel's BTF at load time.
#include <stdbool.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "off_cpu_shared.h"

struct task_struct {
  int pid;
  int tgid;
  unsigned int __state;
} __attribute__((preserve_access_index));

#ifdef TPERF_BPF_X86
struct pt_regs {
  unsigned long bp;
  unsigned long orig_ax;
  unsigned long ip;
  unsigned long sp;
} __attribute__((preserve_access_index));
#endif

// Unwinding is most of the cost of a switch (about a microsecond for the kernel stack, half of
// that for the user one). A thread that blocks again where it blocked last time (the same system
// call, user ip, sp, bp and return address, the same state) reuses the stack ids of that time.
// The kernel part is then assumed the same; as a wait inside one system call at one user site may
// take another kernel path now and then, every kRefresh-th reuse unwinds again. (The kernel stack
// pointer would tell the paths apart, but RANDOMIZE_KSTACK_OFFSET moves it at every system call.)
#define STACK_CACHE_REFRESH 32
struct stack_cache {
  __u64 where[6];
  __u64 kernel_stack;
  __u64 user_stack;
  __u32 reuses;
  __u32 pad;
};

// When a task left: where it blocked and in which state.
struct switch_out {
  __u64 time;
  __u64 kernel_stack;
  __u64 user_stack;
  __u32 state;
  __u32 pad;
};

// The stacks, by a 64-bit hash of their frames. (A BPF_MAP_TYPE_STACK_TRACE map keys a stack by
// its bucket: a stack whose bucket another one holds gets no id at all, and of the 30-odd stacks
// of a small workload one now and then lost its user part that way.)
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __type(key, __u64);
  __type(value, struct tperf_offcpu_stack);
  __uint(max_entries, 16384);
} stacks SEC(".maps");

// Where a stack is taken before it is hashed: one per CPU (a program runs on one at a time).
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __type(key, __u32);
  __type(value, struct tperf_offcpu_stack);
  __uint(max_entries, 1);
} scratch SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __type(key, __u32);  // tid
  __type(value, struct switch_out);
  __uint(max_entries, 65536);
} switched_out SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __type(key, struct tperf_offcpu_key);
  __type(value, struct tperf_offcpu_total);
  __uint(max_entries, 65536);
} totals SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __type(key, __u32);  // tid
  __type(value, struct stack_cache);
  __uint(max_entries, 65536);
} last_stacks SEC(".maps");

// The recorded tasks: tgids (or tids, filter_mode 2); value unused.
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __type(key, __u32);
  __type(value, __u8);
  __uint(max_entries, 65536);
} task_filter SEC(".maps");

// Set by user space before load: 0 every task, 1 tgids in task_filter (and, with follow_forks, the
// processes they fork), 2 tids in task_filter.
const volatile __u32 filter_mode = 0;
const volatile __u32 follow_forks = 0;
// Set by user space when the recording starts and ends.
__u32 enabled = 0;
// Totals that did not fit (the maps were full): said at the end.
__u64 dropped = 0;
// Stacks that did not fit in the stacks map (their totals have no such stack): said at the end.
__u64 dropped_stacks = 0;

#define TASK_DEAD_STATE 0x80

// The current task's kernel stack (flags: frames to skip) or user stack (BPF_F_USER_STACK), put
// in the stacks map under its key, which is returned; 0 for none.
static __always_inline __u64 stack_key(void *ctx, __u64 flags) {
  __u32 zero = 0;
  struct tperf_offcpu_stack *s = bpf_map_lookup_elem(&scratch, &zero);
  if (!s) return 0;
  long n = bpf_get_stack(ctx, s->ips, sizeof(s->ips), flags);
  if (n <= 0) return 0;
  const __u32 frames = (__u32)n / sizeof(__u64);
  __u64 h = 0x9e3779b97f4a7c15ull;
  for (__u32 i = 0; i < TPERF_OFFCPU_STACK_DEPTH; i++) {
    if (i >= frames) s->ips[i] = 0;
    h = (h ^ s->ips[i]) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  if (h == 0) h = 1;
  long err = bpf_map_update_elem(&stacks, &h, s, BPF_NOEXIST);
  if (err != 0 && err != -17 /* EEXIST: the stack is there */) {
    __sync_fetch_and_add(&dropped_stacks, 1);
    return 0;
  }
  return h;
}

static __always_inline int recorded(struct task_struct *t) {
  __u32 pid = BPF_CORE_READ(t, pid);
  if (pid == 0) return 0;  // the idle task
  if (filter_mode == 0) return 1;
  __u32 key = filter_mode == 1 ? (__u32)BPF_CORE_READ(t, tgid) : pid;
  return bpf_map_lookup_elem(&task_filter, &key) != 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(tperf_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next) {
  if (!enabled) return 0;
  __u64 now = bpf_ktime_get_ns();

  if (recorded(prev)) {
    __u32 prev_state = BPF_CORE_READ(prev, __state);
    // A task on its way out of the kernel for good has no interval after this switch.
    if (preempt || !(prev_state & TASK_DEAD_STATE)) {
      struct switch_out out = {};
      out.time = now;
      __u32 tid = BPF_CORE_READ(prev, pid);
      struct stack_cache where = {};
#ifdef TPERF_BPF_X86
      struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(prev);
      if (regs) {
        where.where[0] = BPF_CORE_READ(regs, orig_ax);
        where.where[1] = BPF_CORE_READ(regs, ip);
        where.where[2] = BPF_CORE_READ(regs, sp);
        where.where[3] = BPF_CORE_READ(regs, bp);
        bpf_probe_read_user(&where.where[4], sizeof(__u64), (void *)(where.where[3] + 8));
      }
      where.where[5] = (preempt ? 0x100000000ull : 0) | prev_state;
      struct stack_cache *last = bpf_map_lookup_elem(&last_stacks, &tid);
      // Kernel threads have no user registers to tell their waits apart: they always unwind.
      if (regs && where.where[1] != 0 && last && last->kernel_stack != 0 && last->reuses < STACK_CACHE_REFRESH &&
          last->where[0] == where.where[0] && last->where[1] == where.where[1] &&
          last->where[2] == where.where[2] && last->where[3] == where.where[3] &&
          last->where[4] == where.where[4] && last->where[5] == where.where[5]) {
        out.kernel_stack = last->kernel_stack;
        out.user_stack = last->user_stack;
        last->reuses++;
      } else
#endif
      {
        // The two innermost kernel frames are this program and bpf_trace_run4, which called it.
        out.kernel_stack = stack_key(ctx, 2);
        out.user_stack = stack_key(ctx, BPF_F_USER_STACK);
        where.kernel_stack = out.kernel_stack;
        where.user_stack = out.user_stack;
        bpf_map_update_elem(&last_stacks, &tid, &where, BPF_ANY);
      }
      // Preempted (or yielded with TASK_RUNNING): still runnable; otherwise it sleeps.
      out.state = (preempt || prev_state == 0) ? TPERF_OFFCPU_RUNNABLE : TPERF_OFFCPU_SLEEPING;
      bpf_map_update_elem(&switched_out, &tid, &out, BPF_ANY);
    }
  }

  __u32 next_tid = BPF_CORE_READ(next, pid);
  struct switch_out *out = bpf_map_lookup_elem(&switched_out, &next_tid);
  if (!out) return 0;
  struct tperf_offcpu_key key = {};
  key.pid = BPF_CORE_READ(next, tgid);
  key.tid = next_tid;
  key.kernel_stack = out->kernel_stack;
  key.user_stack = out->user_stack;
  key.state = out->state;
  __u64 delta = now > out->time ? now - out->time : 0;
  bpf_map_delete_elem(&switched_out, &next_tid);

  struct tperf_offcpu_total *total = bpf_map_lookup_elem(&totals, &key);
  if (total) {
    __sync_fetch_and_add(&total->ns, delta);
    __sync_fetch_and_add(&total->count, 1);
    return 0;
  }
  struct tperf_offcpu_total first = {.ns = delta, .count = 1};
  if (bpf_map_update_elem(&totals, &key, &first, BPF_NOEXIST) != 0) {
    // Another CPU may have created it meanwhile.
    total = bpf_map_lookup_elem(&totals, &key);
    if (total) {
      __sync_fetch_and_add(&total->ns, delta);
      __sync_fetch_and_add(&total->count, 1);
    } else {
      __sync_fetch_and_add(&dropped, 1);
    }
  }
  return 0;
}

// The workload's children are recorded too (perf's inherit): a new process of a recorded one
// joins the filter.
SEC("tp_btf/sched_process_fork")
int BPF_PROG(tperf_sched_process_fork, struct task_struct *parent, struct task_struct *child) {
  if (filter_mode != 1 || !follow_forks) return 0;
  __u32 parent_tgid = BPF_CORE_READ(parent, tgid);
  if (!bpf_map_lookup_elem(&task_filter, &parent_tgid)) return 0;
  __u32 child_tgid = BPF_CORE_READ(child, tgid);
  __u8 one = 1;
  bpf_map_update_elem(&task_filter, &child_tgid, &one, BPF_ANY);
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
