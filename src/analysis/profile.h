// A recording as the exports see it: the stack table. Every distinct stack is a node of a tree of
// call sites (a node is a frame plus the node of its caller), so a stack is one index and shared
// prefixes are stored once; samples are counted per (thread, event, stack) and, when an export
// needs the time line, kept in time order as (time, thread, event, stack, weight).
//
// This is the shape the pprof, Firefox Profiler and speedscope formats have, and what the flame
// page draws. It holds only plain data (strings, numbers, indices): a writer in output/ needs
// nothing else. Built from a perf.data file by analysis::build_profile (profile_builder.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tperf::analysis {

inline constexpr uint32_t kNoIndex = UINT32_MAX;

// A file mapped into a process (pprof's Mapping, Firefox's lib).
struct ProfileMapping {
  std::string path;      // the DSO's name as perf shows it in long form ("/usr/lib/x86_64-linux-gnu/libc.so.6",
                         // "[kernel.kallsyms]", "[vdso]")
  std::string short_name;  // perf's short name ("libc.so.6")
  std::string build_id;  // lowercase hex, unpadded (as many bytes as the note has); "" when unknown
  uint64_t start = 0;    // the first mapping of it seen, in the process's address space
  uint64_t limit = 0;
  uint64_t offset = 0;   // file offset of start
  bool kernel = false;
};

// A function: a name and, when the debug information gives it, the file it is defined in.
struct ProfileFunction {
  std::string name;  // demangled as perf shows it; "[unknown]" for an address without symbol
  std::string file;  // "" when unknown
};

// One frame of a stack: a code address in a mapping, resolved to a function. A frame that comes
// from inlining (perf's "(inlined)" entries of --call-graph dwarf chains) is its own frame with
// inlined = true, placed above (callee side of) the frame it was inlined into.
struct ProfileFrame {
  uint32_t function = kNoIndex;  // index into Profile::functions
  uint32_t mapping = kNoIndex;   // index into Profile::mappings; kNoIndex: no map covers it
  uint64_t address = 0;          // the instruction address in the process (kernel addresses as they are)
  uint64_t rel_address = 0;      // the address in the DSO's terms (perf's map-relative address)
  uint32_t line = 0;             // source line when asked for and known, else 0
  std::string file;              // source file of `line`, "" when unknown
  bool inlined = false;
  bool kernel = false;           // a kernel-space frame ('[k]' in perf's terms)
};

// A node of the call-site tree: `frame` called from the stack `parent` (kNoIndex: an outermost
// frame). A stack is identified by its innermost node.
struct ProfileStackNode {
  uint32_t parent = kNoIndex;
  uint32_t frame = kNoIndex;
  uint32_t depth = 0;  // 0 for an outermost frame
};

struct ProfileThread {
  int32_t pid = -1;
  int32_t tid = -1;
  std::string comm;  // the thread's last command name
};

struct ProfileEvent {
  std::string name;  // as perf report names it ("cpu-clock:u", "task-clock")
  std::string unit;  // unit of the period: "nanoseconds" for cpu-clock/task-clock, "count" otherwise
};

// Samples of one thread and event with one stack.
struct ProfileCount {
  uint32_t thread = 0;
  uint32_t event = 0;
  uint32_t stack = kNoIndex;  // kNoIndex: the sample had no frame at all
  uint64_t samples = 0;
  uint64_t weight = 0;  // sum of the periods
};

// One sample with its time (only when the builder was asked for them).
struct ProfileSample {
  uint64_t time = 0;  // perf's clock, nanoseconds
  uint32_t thread = 0;
  uint32_t event = 0;
  uint32_t stack = kNoIndex;
  uint64_t weight = 0;
  uint32_t count = kNoIndex;  // its entry in Profile::counts
  // An off-CPU switch-out (off_cpu / wall_clock): its weight is the time the thread then spent
  // switched out, from `time` on.
  bool interval = false;
};

// A stretch of a thread switched out, from the file's sched_switch samples (only when the
// builder was asked for them): what the flame page's timeline draws as runnable or sleeping.
struct ProfileThreadState {
  uint32_t thread = 0;  // index into Profile::threads
  uint64_t start = 0;   // perf's clock, nanoseconds
  uint64_t end = 0;
  bool runnable = false;  // preempted or yielded; false: sleeping (S, D, I, ...)
};

struct Profile {
  std::vector<ProfileMapping> mappings;
  std::vector<ProfileFunction> functions;
  std::vector<ProfileFrame> frames;
  std::vector<ProfileStackNode> stacks;
  std::vector<ProfileThread> threads;
  std::vector<ProfileEvent> events;
  std::vector<ProfileCount> counts;    // one per distinct (thread, event, stack), in first-seen order
  std::vector<ProfileSample> samples;  // in time order; empty unless asked for
  // The off-CPU stretches of the threads, by thread then time; has_thread_states tells whether
  // the file had sched_switch samples to take them from (asked for with thread_states).
  std::vector<ProfileThreadState> thread_states;
  bool has_thread_states = false;
  uint64_t first_time = 0;  // time of the first and last sample (0 without timestamps)
  uint64_t last_time = 0;
  // Wall-clock time (nanoseconds since the epoch) of the first sample: from the file's CLOCK_DATA
  // when it has it, else the file's last modification (perf's "captured on", the end of the
  // recording) less the samples' span; 0 when neither is known (a pipe without CLOCK_DATA).
  int64_t wall_time_ns = 0;
  uint64_t lost_samples = 0;
  // The report header lines a viewer may show ("captured on", "hostname", "cmdline", ...), and
  // the unwinding quality block, as tperf report prints them.
  std::vector<std::pair<std::string, std::string>> info;
  std::string unwind_summary;
  // Records that could not be decoded (the file offset and why), skipped while building.
  std::vector<std::string> problems;

  // The frames of a stack from the outermost to the innermost.
  std::vector<uint32_t> frames_root_first(uint32_t stack) const {
    std::vector<uint32_t> out;
    for (uint32_t s = stack; s != kNoIndex; s = stacks[s].parent) out.push_back(stacks[s].frame);
    return {out.rbegin(), out.rend()};
  }
};

}  // namespace tperf::analysis
