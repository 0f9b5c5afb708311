// Records for what existed before recording started, read from /proc (perf's "synthesized"
// events): FORK + COMM per thread and MMAP2 per executable mapping of each process, the kernel's
// own map, module maps. System-wide synthesis reads processes in parallel on a WorkQueue and
// emits them in /proc order.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "perfdata/record_builder.h"
#include "util/workqueue.h"

namespace tperf::record {

using RecordSink = std::function<void(std::span<const uint8_t>)>;

struct SynthesisOptions {
  bool mmap_data = false;     // also non-executable readable mappings (MISC_MMAP_DATA)
  bool buildid_mmap = false;  // MMAP2 records carry the build id of their file when it has one
  std::string proc_dir = "/proc";
};

// What /proc/PID/task/TID/status says about a thread.
struct TaskStatus {
  std::string name;
  int32_t tgid = -1;
  int32_t ppid = -1;
  bool kernel_thread = false;  // no VmPeak but a Threads line: perf's test for kernel threads
};
std::optional<TaskStatus> parse_task_status(std::string_view text);

// One line of /proc/PID/maps, as perf turns it into an MMAP2 record.
struct MapsLine {
  uint64_t start = 0, end = 0, pgoff = 0, inode = 0;
  uint32_t prot = 0, flags = 0, maj = 0, min = 0;
  std::string path;  // "" for anonymous
};
// Parses one line (without the newline); nullopt when it is not a maps line.
std::optional<MapsLine> parse_maps_line(std::string_view line);

// Counters of one synthesis run.
struct SynthesisStats {
  uint64_t processes = 0;
  uint64_t threads = 0;
  uint64_t maps = 0;
};

// Every process in /proc, as perf does for -a: per thread FORK (misc FORK_EXEC, time 0) and
// COMM, per process the MMAP2 of its executable mappings (none for kernel threads). Processes are
// read in parallel on `wq` and written through `sink` in /proc order. Tasks that exit meanwhile
// are skipped.
SynthesisStats synthesize_all_tasks(const perfdata::RecordBuilder& rb, util::WorkQueue& wq,
                                    const SynthesisOptions& options, const RecordSink& sink);

// The threads of -p/-t (perf's thread-map synthesis): COMM per thread, MMAP2 of the process for
// each thread-group leader (and for the leader of a listed thread that is not listed itself).
SynthesisStats synthesize_threads(const perfdata::RecordBuilder& rb, std::span<const int32_t> tids,
                                  const SynthesisOptions& options, const RecordSink& sink);

// One COMM for a thread (the workload before exec).
bool synthesize_comm(const perfdata::RecordBuilder& rb, int32_t tid, const SynthesisOptions& options,
                     const RecordSink& sink);

// The kernel map (perf's "[kernel.kallsyms]_text" MMAP: _text to _etext from /proc/kallsyms) and
// one map per module from /proc/modules. False when kallsyms shows no addresses
// (kptr_restrict), in which case nothing is written.
bool synthesize_kernel_maps(const perfdata::RecordBuilder& rb, const SynthesisOptions& options,
                            const RecordSink& sink);

// The thread ids of a process (/proc/PID/task), sorted; empty if it does not exist.
std::vector<int32_t> process_threads(int32_t pid, const std::string& proc_dir = "/proc");

}  // namespace tperf::record
