// The recorder's event list (perf's evlist): the perf_event_attr of every event as perf 6.1 sets
// it up, one fd per (event, CPU, thread), one ring buffer per CPU that every fd on that CPU writes
// into, and the open / enable / disable / close steps run across CPUs in parallel on a WorkQueue.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "perfdata/attr.h"
#include "perfdata/records.h"
#include "record/event_spec.h"
#include "record/ring_buffer.h"
#include "util/workqueue.h"

namespace tperf::record {

enum class CallGraph { kNone, kFramePointer, kDwarf };

struct EventListConfig {
  std::vector<EventSpec> events;
  // Per-CPU events on these CPUs for every task (-a / -C), else per-thread events on `threads`.
  bool system_wide = false;
  std::vector<int> cpus;     // CPUs to open on (every online CPU unless -C)
  std::vector<int> threads;  // tids (workload, -p, -t); ignored when system_wide
  bool inherit = true;
  bool enable_on_exec = false;  // a forked workload: counting starts at its exec
  bool use_freq = true;
  uint64_t freq = 4000;
  uint64_t period = 0;  // -c
  CallGraph call_graph = CallGraph::kNone;
  uint32_t dwarf_stack_size = 8192;
  // fp callchains whose user part the kernel unwinds at return to user space (defer_callchain on
  // the sampling events, defer_output on the tracking event). Only when the kernel accepts it.
  bool defer_callchain = false;
  bool switch_events = false;
  bool buildid_mmap = false;  // MMAP2 records carry build ids (attr.build_id)
  int clockid = -1;           // -k; -1: the kernel's perf clock
  bool sample_cpu = false;    // force the CPU bit
  // The file gets one more attr of another sample layout that no fd opens (the BPF way's
  // offcpu-time): every sample then names its event with IDENTIFIER, as perf's do.
  bool extra_event = false;
};

// The sample_regs_user mask perf uses for DWARF unwinding on this architecture.
uint64_t dwarf_regs_mask();

// Open failure: `what` is a message for the user that says what to change.
class EventOpenError : public std::runtime_error {
 public:
  EventOpenError(const std::string& what, int err) : std::runtime_error(what), err_(err) {}
  int error() const { return err_; }

 private:
  int err_;
};

class EventList {
 public:
  struct Event {
    EventSpec spec;
    perfdata::PerfEventAttr attr;
    bool tracking = false;  // carries mmap/comm/task (the first event, or the dummy)
    std::vector<int> fds;   // [cpu_index * nr_threads + thread_index], -1 if skipped
    std::vector<uint64_t> ids;
    std::vector<perfdata::IdIndexEntry> id_index;
  };

  // Builds the attrs (no system call). Throws std::invalid_argument for impossible combinations.
  explicit EventList(EventListConfig config);
  ~EventList();
  EventList(const EventList&) = delete;
  EventList& operator=(const EventList&) = delete;

  // Opens every fd and maps one ring buffer of `data_pages` pages per CPU, CPUs in parallel.
  // Threads that vanished meanwhile are skipped (-p of a busy process). Throws EventOpenError.
  void open(util::WorkQueue& wq, size_t data_pages);
  // Enables / disables every fd (in parallel). Errors are ignored (an exited task's fds).
  void enable(util::WorkQueue& wq);
  void disable(util::WorkQueue& wq);
  // Unmaps and closes everything (in parallel).
  void close(util::WorkQueue& wq);

  const EventListConfig& config() const { return config_; }
  std::vector<Event>& events() { return events_; }
  const std::vector<Event>& events() const { return events_; }
  std::vector<RingBuffer>& buffers() { return buffers_; }
  // The CPU each fd column is opened on: config.cpus, or {-1} for per-thread events on any CPU.
  const std::vector<int>& open_cpus() const { return open_cpus_; }
  const std::vector<int>& open_threads() const { return open_threads_; }
  // Every open fd (to poll for POLLHUP / to read lost counts).
  std::vector<int> all_fds() const;

 private:
  void build_attrs();
  int open_one(Event& ev, int pid, int cpu, int group_fd);

  EventListConfig config_;
  std::vector<Event> events_;
  std::vector<int> open_cpus_;
  std::vector<int> open_threads_;
  std::vector<RingBuffer> buffers_;
};

}  // namespace tperf::record
