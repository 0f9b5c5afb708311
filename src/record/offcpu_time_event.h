// The `offcpu-time` event the BPF way of `record --off-cpu` writes its totals as, in the layout
// perf (5.19+, --off-cpu with BPF skeletons) uses: a software BPF_OUTPUT attr named offcpu-time,
// and at the end of the recording one SAMPLE per total (thread, stacks, state) whose period is
// the time switched out in nanoseconds, time stamps from kOffcpuTimestamp up (after every real
// sample), callchain = the stack the thread blocked in. The state (runnable or sleeping), which
// perf's layout has no field for, is the sample's id: the attr carries two ids, the first for
// sleeping, the second for runnable (perf reads both as the same event).
#pragma once

#include <cstdint>
#include <vector>

#include "perfdata/attr.h"

namespace tperf::record {

// perf's time stamp of its first off-CPU sample; each next one adds 1.
inline constexpr uint64_t kOffcpuTimestamp = ~uint64_t{0} << 32;

// One in-kernel total.
struct OffCpuTotal {
  uint32_t pid = 0;  // tgid
  uint32_t tid = 0;
  bool runnable = false;  // preempted (or yielded) rather than sleeping
  uint64_t ns = 0;        // time switched out
  uint64_t count = 0;     // switches
  std::vector<uint64_t> kernel_stack;  // leaf first, no context markers
  std::vector<uint64_t> user_stack;
};

// The attr: software BPF_OUTPUT, freq 1 as perf's, sample_type IDENTIFIER | IP | TID | TIME |
// PERIOD | CALLCHAIN (plus CPU when `like`, the recording's first attr, samples it), the other
// attrs' clock and sample_id_all.
perfdata::PerfEventAttr offcpu_time_attr(const perfdata::PerfEventAttr& like);

// The SAMPLE record (host byte order) of `total`, with sample id `id` and time `time`. The ip is
// the callchain's first entry; misc says kernel when there is a kernel stack, user otherwise.
std::vector<uint8_t> offcpu_time_sample(const perfdata::PerfEventAttr& attr, const OffCpuTotal& total, uint64_t id,
                                        uint64_t time);

}  // namespace tperf::record
