// perf report's aggregation on the shared sample path: the samples of a replayed file into one
// Hist per event (a group's members side by side in their leader's), with their callchains,
// perf's filters, off-CPU weights and the unwinding statistics. cli/cmd_report.cc turns its
// options into ReportBuildOptions and prints what the builder holds; samples that agree in all
// the report keys by (event, thread, comm, raw chain, address-space versions) are resolved once.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "analysis/branch_hist.h"
#include "analysis/callchain_spec.h"
#include "analysis/hist.h"
#include "analysis/mem_sort.h"
#include "analysis/off_cpu.h"
#include "analysis/sample_path.h"
#include "analysis/time_filter.h"
#include "analysis/unwind_stats.h"
#include "session/deferred_callchains.h"

#include "perfdata/sample.h"

namespace tperf::perfdata {
class Reader;
struct Record;
struct EventAttr;
}  // namespace tperf::perfdata
namespace tperf::session {
class Machine;
class Thread;
struct Map;
}  // namespace tperf::session
namespace tperf::symbols {
class Symbolizer;
class DwarfUnwinder;
}  // namespace tperf::symbols

namespace tperf::analysis {

// The srcline texts of the report's keys (the plain srcline key, branch mode's srcline_from/to)
// and of frames in chains keyed by address: perf's map__srcline of an address, "??:0" without a
// map, looked up once per (dso, pid, address, kind) and interned; entries point into it, so it
// lives as long as they do.
class SrclineTexts {
 public:
  // `frame`, `with_name`, `plain_unknown`: see Symbolizer::report_srcline (`with_name` false: a
  // chain frame's text; `plain_unknown` too: one in chains keyed by srcline, nullptr where perf
  // 6.1 has none).
  const std::string* get(symbols::Symbolizer& symbolizer, const session::Map* map, int32_t pid, uint64_t ip,
                         bool frame, bool with_name = true, bool plain_unknown = false);

 private:
  struct Key {
    const void* dso;
    int32_t pid;
    uint64_t addr;
    bool frame;
    bool with_name;
    bool plain_unknown;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<uint64_t>()(k.addr) ^ (std::hash<const void*>()(k.dso) << 1) ^ (static_cast<size_t>(k.pid) << 7) ^
             k.frame ^ (static_cast<size_t>(k.with_name) << 1) ^ (static_cast<size_t>(k.plain_unknown) << 2);
    }
  };
  std::unordered_map<Key, const std::string*, KeyHash> cache_;
  std::unordered_set<std::string> texts_;
};

// perf's remove_loops() of --branch-history: where the branches taken from one address repeat a
// run taken before (a loop), the repeat is dropped and the iteration counted on the entry after
// it (perf's hash of 127 slots without collision handling decides which repeats it sees).
struct BranchIterations {
  uint32_t nr_loop_iter = 0;
  uint64_t cycles = 0;
};
size_t remove_branch_loops(std::vector<perfdata::BranchEntry>& entries, std::vector<BranchIterations>& iters);

struct ReportBuildOptions {
  std::vector<SortKey> keys;  // every key an entry is told apart by (--sort's, -F's, -p's parent)
  // Whether comm came in as a sort key of its own (--sort, the default order), not only by -F:
  // perf's entries are collapsed then (Hist::collapse_by_comm).
  bool comm_sort_key = true;
  // The chain displays that keep a chain per entry (-g graph/fractal, folded, flat); -g's order
  // and -G decide the order chains are walked in.
  bool graph = true;
  bool folded = false;
  bool flat = false;
  CallchainSpec::Order chain_order = CallchainSpec::Order::kDefault;
  bool inverted = false;
  // -g ...,address: the chains' frames told apart by address, each shown with its srcline (as
  // --branch-history has them).
  bool address_frames = false;
  // -g ...,srcline: the chains' frames told apart by their srcline, each shown with it.
  bool srcline_frames = false;
  // -g ...,count: the chains' trees count their samples.
  bool count_chain_samples = false;
  // --show-cpu-utilization, -F overhead_sys...: the entries' periods split by cpumode.
  bool cpu_modes = false;
  // --branch-history: a sample's branch stack, oldest branch first, is its chain (each branch's
  // target, then where it was taken), its frames told apart by address, with branch counts.
  bool branch_history = false;
  bool branch_chains = false;  // ...and the file's header says it has branch stacks (chains of them alone, and counts)
  unsigned max_stack = 127;
  bool children = false;     // --children
  bool no_children = false;  // --no-children
  // --hierarchy: perf turns accumulation off after it chose the chains' order for it.
  bool hierarchy = false;
  bool summary = true;       // collect the unwinding quality block
  bool expand_inline = true;  // unwound frames expanded into their inlined functions
  const std::regex* parent_regex = nullptr;  // the parent key's pattern (with kParent among the keys)
  bool exclude_other = false;                // -x
  bool no_group = false;
  // -U: a sample whose address has no symbol is left out (of the totals too), and so is every
  // callchain frame without one, as perf does.
  bool hide_unresolved = false;
  // Filters: a sample outside them makes or joins a hidden entry (HistEntry::filtered) and counts
  // in the totals; --cpu and --time drop samples before anything counts them, as perf does.
  std::vector<std::string> comms, dsos, symbols;
  std::vector<int32_t> pids, tids, cpus;
  std::vector<TimeRange> time_ranges;
  // --off-cpu: switch samples weigh their switched-out interval; `wall_section` >= 0
  // (--wall-clock): that event's section also takes the on-CPU time samples.
  const OffCpuTracker* off_cpu = nullptr;
  std::optional<OffCpuState> wanted_state;
  int wall_section = -1;
  // The -s trace key's text of a tracepoint sample (perf script's trace field), when that key is
  // in use; the builder interns it.
  std::function<void(std::string& out, const perfdata::EventAttr& attr, const perfdata::Sample& sample,
                     const session::Thread& thread)>
      trace_text;
  // Each READ record, in time order (-T).
  std::function<void(const perfdata::Record& rec)> on_read;
  unsigned jobs = 0;  // ReplayHandlers::jobs
};

class ReportBuilder {
 public:
  struct EventHist {
    Hist hist;
    // Counted by the sample path for every sample, while the adding thread writes the hist's own
    // totals: on a cache line of their own (they shared one with the hist's last members).
    alignas(64) uint64_t samples = 0;
    uint64_t period = 0;
  };
  struct GroupSlot {
    size_t leader;    // the attr index of the section the samples go to
    unsigned member;  // their column there
  };

  // Everything given must outlive the builder. Sets up the events the reader knows (a pipe file
  // announces its own as it goes) and, when there are any, decides on Children/Self.
  ReportBuilder(perfdata::Reader& reader, session::Machine& machine, symbols::Symbolizer& symbolizer,
                symbols::DwarfUnwinder& unwinder, SymbolPreloader& preloader, ReportBuildOptions options);
  ~ReportBuilder();
  ReportBuilder(const ReportBuilder&) = delete;
  ReportBuilder& operator=(const ReportBuilder&) = delete;

  // Replays the whole file into the hists. `on_progress`: the bytes read so far, now and then.
  void run(const std::function<void(uint64_t)>& on_progress = {});

  // The sections by attr index; call setup_events() first after run() (a pipe may have named
  // events after its last sample).
  void setup_events();
  const std::vector<EventHist>& events() const;
  const std::vector<GroupSlot>& group_slots() const;
  const std::vector<unsigned>& group_size() const;  // members of the group each attr leads (0: none)

  bool decided() const;        // Children/Self known (the file named its events)
  bool children() const;       // a Children column
  bool any_callchain() const;  // some event records callchains

  // The quality block's numbers (with the deferred-callchain counts); call once, after run().
  UnwindStats unwind_stats();
  uint64_t lost_samples() const;
  // Records that could not be decoded, "offset 0x..: what".
  const std::vector<std::string>& problems() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// perf report's branch mode (-b): every branch of a sample's branch stack one entry, in a hist
// per event (by attr index; events without branch samples have none).
struct BranchHists {
  std::vector<std::unique_ptr<BranchHist>> hists;
  SrclineTexts srclines;  // what BranchSide::srcline points to
  BranchTypeStats type_stats;  // of every event, as perf keeps one
  ReplayResult replayed;
};
BranchHists build_branch_hists(perfdata::Reader& reader, session::Machine& machine, symbols::Symbolizer& symbolizer,
                               SymbolPreloader& preloader, const std::vector<BranchSortKey>& keys, unsigned jobs);

// perf report's memory mode (--mem-mode) and weight keys: a sample's code and data locations,
// data source and weights, in a hist per event (by attr index). `plain`: a sample costs its
// period (weight sort keys without --mem-mode), else its weight.
struct MemHists {
  std::vector<MemHist> hists;
  ReplayResult replayed;
};
MemHists build_mem_hists(perfdata::Reader& reader, session::Machine& machine, symbols::Symbolizer& symbolizer,
                         SymbolPreloader& preloader, const std::vector<MemKey>& keys, bool plain, unsigned jobs);

}  // namespace tperf::analysis
