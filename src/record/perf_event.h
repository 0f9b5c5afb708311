// The perf_event_open system call and the ioctls the recorder uses, with error messages that say
// what to change (perf_event_paranoid, capabilities, a missing PMU) instead of a bare errno.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "perfdata/attr.h"

namespace tperf::record {

// Opens one event; returns the fd or -errno. `attr` is encoded with attr.size bytes (0 -> 128).
int perf_event_open(const perfdata::PerfEventAttr& attr, int pid, int cpu, int group_fd, unsigned long flags);

// ioctl wrappers; each returns 0 or -errno.
int event_enable(int fd);
int event_disable(int fd);
int event_set_output(int fd, int target_fd);
// The kernel's id of the event behind fd (PERF_EVENT_IOC_ID); -errno on failure.
int event_id(int fd, uint64_t* id);
// read() of an event opened with read_format ID|LOST: {value, id, lost}. False if it failed.
bool event_read_lost(int fd, uint64_t* lost);

// Whether the running kernel accepts attr.defer_callchain (bit 38, Linux 6.19+): opens a
// cpu-clock event on this thread with the bit set, once per process. Older kernels reject the
// reserved bit (E2BIG/EINVAL).
bool kernel_accepts_deferred_callchains();

// /proc/sys/kernel/perf_event_paranoid, or 2 (the kernel default) if it cannot be read.
int perf_event_paranoid();

// A message for a failed open of `event_name` (errno `err`, `pid`/`cpu` as passed), naming the
// setting or capability that would make it work.
std::string explain_open_error(int err, const std::string& event_name, const perfdata::PerfEventAttr& attr,
                               int pid, int cpu);

// CPUs listed in a sysfs cpu list file such as /sys/devices/system/cpu/online ("0-3,8").
std::vector<int> read_cpu_list_file(const std::string& path);
// Parses "0-3,8" (the -C syntax and sysfs lists); throws std::invalid_argument when malformed.
std::vector<int> parse_cpu_list(const std::string& text);
// Formats CPUs as perf does in lists: "0-3,8".
std::string format_cpu_list(const std::vector<int>& cpus);
// The online CPUs (/sys/devices/system/cpu/online; falls back to 0..nprocs-1).
std::vector<int> online_cpus();

}  // namespace tperf::record
