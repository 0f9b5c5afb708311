// `tperf record`: opens the event list, writes what a report needs before the first sample
// (attrs, id index, kernel and task maps from /proc, host features), drains the ring buffers into
// a perf.data file (file, pipe, or the --threads directory with one reader thread per CPU group)
// until the workload ends or a signal arrives, then completes the file (build ids, sample times)
// so that perf 6.1 reads it without a warning.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "record/event_list.h"
#include "record/event_spec.h"
#include "record/host_features.h"
#include "record/off_cpu_bpf.h"

namespace tperf::record {

struct RecordOptions {
  std::vector<std::string> command;  // the workload; may be empty with -p/-t/-a/-C
  std::vector<int32_t> pids;         // -p: every thread of these processes
  std::vector<int32_t> tids;         // -t: these threads only
  bool system_wide = false;          // -a
  std::vector<int> cpus;             // -C (system-wide on these CPUs)
  std::vector<EventSpec> events;     // empty: cpu-clock
  std::string output = "perf.data";  // "-": pipe mode on standard output
  bool use_freq = true;
  uint64_t freq = 4000;
  uint64_t period = 0;
  CallGraph call_graph = CallGraph::kNone;
  uint32_t dwarf_stack_size = 8192;
  bool defer_callchain = false;  // --call-graph fp,defer: user stacks unwound at return to user (6.19+)
  bool switch_events = false;
  int compression_level = 0;  // -z: zstd level (perf's default is 1)
  size_t mmap_pages = 0;      // data pages per ring buffer (a power of two); 0: default_mmap_pages()
  bool inherit = true;
  int clockid = -1;
  bool buildid_mmap = false;
  bool collect_build_ids = true;  // the BUILD_ID feature (read the file back at the end)
  std::optional<CpuGrouping> threads;  // --threads
  unsigned synthesis_threads = 0;      // /proc synthesis parallelism; 0: online CPUs
  bool quiet = false;
  // --off-cpu, the BPF way: the loaded program (the caller's); the recorder adds the workload to
  // its filter, enables it while recording and writes its totals as offcpu-time samples.
  OffCpuBpf* off_cpu_bpf = nullptr;
  std::vector<std::string> cmdline;  // for the CMDLINE feature
  std::string version = "0.1.0";
};

struct RecordResult {
  int exit_code = 0;  // the workload's, 128 + signal, or 1..2 on tperf's own failure
  uint64_t samples = 0;
  uint64_t records = 0;
  uint64_t lost_events = 0;   // LOST records the kernel wrote (buffer full)
  uint64_t lost_records = 0;  // records they count
  uint64_t lost_samples = 0;  // LOST_SAMPLES (read_format LOST) at the end
  uint64_t wakeups = 0;
  uint64_t bytes_written = 0;  // size of the output (all files of a directory)
  std::string error;           // why recording failed (already printed)
};

// Runs a recording. Messages ("[ tperf record: ... ]", errors) go to `messages` (stderr).
RecordResult run_record(const RecordOptions& options, std::FILE* messages);

// Parses perf's -k values: a number, or monotonic/mono, monotonic_raw/raw, realtime/real,
// boottime/boot, tai. Throws std::invalid_argument.
int parse_clockid(const std::string& text);
// Parses --call-graph "fp" / "fp,defer" / "dwarf[,size]"; throws std::invalid_argument.
void parse_call_graph(const std::string& text, CallGraph* mode, uint32_t* dwarf_size, bool* defer = nullptr);
// Parses -m: a page count (power of two) or a size with B/K/M/G; throws std::invalid_argument.
size_t parse_mmap_pages(const std::string& text);
// The ring-buffer size (data pages, a power of two) without -m: 128 (512 KiB, perf's) for an
// unprivileged user; 512 (2 MiB) for root, halved while `cpus` buffers would pass 256 MiB.
size_t default_mmap_pages(size_t cpus);

}  // namespace tperf::record
