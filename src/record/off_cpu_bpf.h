// The BPF way of `record --off-cpu`: loads and attaches the sched_switch program of
// record/bpf/off_cpu.bpf.c (embedded as a libbpf skeleton when the build found clang, bpftool
// and libbpf), and reads its in-kernel totals at the end of the recording.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "record/offcpu_time_event.h"

namespace tperf::record {

// Which tasks count.
struct OffCpuBpfFilter {
  enum class Mode { kAll, kProcesses, kThreads } mode = Mode::kProcesses;
  bool follow_forks = true;  // kProcesses: the processes they fork count too
};

class OffCpuBpf {
 public:
  // Whether this tperf was built with the BPF program.
  static bool built();
  // Loads and attaches the program, disabled. nullptr and `why` (for the user) when it cannot:
  // not built, no BTF, not permitted, ...
  static std::unique_ptr<OffCpuBpf> open(const OffCpuBpfFilter& filter, std::string* why);
  ~OffCpuBpf();
  OffCpuBpf(const OffCpuBpf&) = delete;
  OffCpuBpf& operator=(const OffCpuBpf&) = delete;

  // A process (kProcesses) or thread (kThreads) to record.
  void add_task(int32_t id);
  // Starts / stops the accounting.
  void set_enabled(bool on);
  // The totals, their stacks resolved from the stack map. Call after set_enabled(false).
  std::vector<OffCpuTotal> totals() const;
  // Intervals the full maps could not keep.
  uint64_t dropped() const;
  // Stacks the full stacks map could not keep (the intervals are kept, without that stack).
  uint64_t dropped_stacks() const;

 private:
  struct Impl;
  explicit OffCpuBpf(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tperf::record
