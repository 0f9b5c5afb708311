// How far a profile's stacks can be trusted. For every sample: does the user part of its
// callchain reach a thread's entry point (_start, start_thread, clone, ...), and if not, where
// and why did the walk stop; which DSOs left frames without symbols and why; stack copies
// (--call-graph dwarf) that filled their size; lost records. `tperf report` prints the result
// after its header (output/unwind_summary.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "perfdata/sample.h"
#include "session/callchain.h"
#include "session/deferred_callchains.h"

namespace tperf::symbols {
class Symbolizer;
class Resolver;
struct ResolvedFrame;
struct Symbol;
}
namespace tperf::session {
struct Dso;
}

namespace tperf::analysis {

struct UnwindStats {
  uint64_t samples = 0;         // every sample seen
  uint64_t with_callchain = 0;  // ... that carry a callchain
  // Callchains with user-space frames, each in exactly one of the five classes below.
  uint64_t user_chains = 0;
  uint64_t complete = 0;          // a frame is a thread entry point: the stack is whole
  uint64_t end_unmapped = 0;      // the last frame is outside every mapping ([unknown])
  uint64_t depth_limit = 0;       // the kernel cut the chain at its maximum depth
  uint64_t end_unsymbolized = 0;  // the last frame is mapped but has no symbol ([unknown])
  uint64_t end_early = 0;         // the last frame is a named function, not an entry point
  unsigned max_depth = 0;         // the depth limit the chains were held against
  // User callchains with at least one [unknown] frame (anywhere, either kind).
  uint64_t with_unknown = 0;
  // --call-graph dwarf: samples with a user stack copy, and those whose copy filled the size
  // asked for (the stack went on beyond what was saved).
  uint64_t stack_copies = 0;
  uint64_t stack_copies_full = 0;
  uint64_t stack_copy_size = 0;  // the largest size asked for
  // PERF_RECORD_LOST records and the events they stand for; PERF_RECORD_LOST_SAMPLES counts.
  uint64_t lost_records = 0;
  uint64_t lost_events = 0;
  uint64_t lost_samples = 0;
  // DSOs that left sampled frames without a symbol: the samples with such a frame there (each
  // sample counted once per DSO), and why (Symbolizer::symbol_problem). Most samples first.
  struct DsoProblem {
    std::string name;
    std::string why;
    uint64_t samples = 0;
  };
  std::vector<DsoProblem> dsos;
  // Deferred user callchains (kernel 6.19+): how the time-ordering stage joined them
  // (OrderedEvents::deferred_stats()); shown only when the file has any.
  session::DeferredCallchains::Stats deferred;
};

// Whether `name` is a function a thread's stack starts in: the program's or a thread's entry
// point (C runtimes, the dynamic loader, clone), so a callchain reaching it is whole.
bool is_thread_entry_point(std::string_view name);

// Collects UnwindStats from the samples of one file, in any order. Not thread-safe.
class UnwindStatsCollector {
  struct DsoEntry;

 public:
  // What one distinct stack says about unwinding (whole or where it stopped, the DSOs without
  // symbols it went through): worked out once by classify() and added for every sample of that
  // stack, so repeated stacks cost no walk over their frames.
  struct StackVerdict {
    enum class End : uint8_t { kNoUserPart, kComplete, kUnmapped, kDepthLimit, kUnsymbolized, kEarly };
    bool has_callchain = false;
    bool unknown_user = false;
    End end = End::kNoUserPart;
    unsigned limit = 0;
    std::vector<DsoEntry*> dsos;  // each once
  };
  // `resolver`: the one the caller resolves its frames with (it needs a symbolizer); frames
  // looked up here are then found in its cache, and the other way round.
  explicit UnwindStatsCollector(symbols::Resolver& resolver) : resolver_(resolver) {}

  // One sample. `frames`: its callchain resolved leaf first (session::resolve_callchain) with
  // no frame limit; for a sample without a callchain, its own ip as the one frame (or empty).
  // `sample_max_stack`: the attr's (0 = the kernel's default, 127). `stack_size`: the attr's
  // sample_stack_user.
  void add_sample(const perfdata::Sample& sample, bool has_callchain, int32_t pid, unsigned sample_max_stack,
                  uint64_t stack_size, std::span<const session::CallchainFrame> frames) {
    add_stack_copy(sample, stack_size);
    add(classify(sample.callchain, has_callchain, pid, sample_max_stack, frames));
  }
  // The same in two steps: the stack's verdict (from its raw callchain and resolved frames), then
  // per sample its stack copy and the verdict. `resolved`: when not empty, each frame as the
  // caller's resolver found it (parallel to `frames`, its symbol in the frame's map), so that a
  // caller that resolves the frames anyway does not have them looked up twice.
  StackVerdict classify(std::span<const uint64_t> callchain, bool has_callchain, int32_t pid, unsigned sample_max_stack,
                        std::span<const session::CallchainFrame> frames,
                        std::span<const symbols::ResolvedFrame> resolved = {});
  void add(const StackVerdict& verdict, uint64_t samples = 1);
  void add_stack_copy(const perfdata::Sample& sample, uint64_t stack_size);
  // What the replay counted of the file's LOST and LOST_SAMPLES records (ReplayResult).
  void add_lost(uint64_t records, uint64_t events, uint64_t samples) {
    stats_.lost_records += records;
    stats_.lost_events += events;
    stats_.lost_samples += samples;
  }

  // The totals, DSO problems sorted (most samples first, then by name).
  UnwindStats finish() const;

 private:
  struct DsoEntry {
    std::string why;  // "" = the DSO has symbols
    uint64_t samples = 0;
  };
  DsoEntry& dso_entry(const session::CallchainFrame& f, int32_t pid);
  // Whether the frame has a symbol (1) that is a thread entry point (3); cached by address.
  uint8_t lookup(const session::CallchainFrame& f, int32_t pid);
  static uint8_t verdict_of(const symbols::Symbol* sym);

  struct CacheSlot {
    uint64_t ip = 0;
    const void* map = nullptr;
    const void* dso = nullptr;
    uint8_t result = 0;
  };
  std::vector<CacheSlot> cache_ = std::vector<CacheSlot>(1 << 14);

  symbols::Resolver& resolver_;
  UnwindStats stats_;
  std::unordered_map<const session::Dso*, DsoEntry> dsos_;
};

}  // namespace tperf::analysis
