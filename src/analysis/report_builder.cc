#include "analysis/report_builder.h"

#include <fmt/format.h>

#include <pthread.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <span>
#include <thread>
#include <utility>
#include <unordered_map>
#include <unordered_set>

#include "analysis/sample_filter.h"
#include "analysis/sample_path.h"
#include "analysis/sample_read.h"
#include "perfdata/abi.h"
#include "perfdata/reader.h"
#include "perfdata/records.h"
#include "perfdata/sample.h"
#include "session/callchain.h"
#include "session/machine.h"
#include "symbols/dwarf_unwind.h"
#include "symbols/resolver.h"
#include "symbols/symbolizer.h"
#include "util/word_key_map.h"
#include "util/workqueue.h"

namespace tperf::analysis {

const std::string* SrclineTexts::get(symbols::Symbolizer& symbolizer, const session::Map* map, int32_t pid,
                                     uint64_t ip, bool frame, bool with_name, bool plain_unknown) {
  const Key key{map ? map->dso : nullptr, pid, ip, frame, with_name, plain_unknown};
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  std::string text = map ? symbolizer.report_srcline(*map, pid, ip, frame, with_name, plain_unknown) : "??:0";
  const std::string* interned = plain_unknown && text.empty() ? nullptr : &*texts_.insert(std::move(text)).first;
  cache_.emplace(key, interned);
  return interned;
}

size_t remove_branch_loops(std::vector<perfdata::BranchEntry>& l, std::vector<BranchIterations>& iter) {
  constexpr int kSlots = 127;
  constexpr uint8_t kNoEntry = 0xff;
  int nr = static_cast<int>(std::min<size_t>(l.size(), kSlots));
  iter.assign(static_cast<size_t>(nr), {});
  uint8_t slot[kSlots];
  std::fill(std::begin(slot), std::end(slot), kNoEntry);
  for (int i = 0; i < nr; ++i) {
    // The kernel's hash_64(from, 7), folded into 127 slots.
    const int h = static_cast<int>(static_cast<uint32_t>((l[static_cast<size_t>(i)].from * 0x61C8864680B583EBull) >> 57) % kSlots);
    if (slot[h] == kNoEntry) {
      slot[h] = static_cast<uint8_t>(i);
      continue;
    }
    if (l[slot[h]].from != l[static_cast<size_t>(i)].from) continue;
    bool is_loop = true;
    int off = 0;
    for (int j = slot[h]; j < i && i + off < nr; ++j, ++off) {
      if (l[static_cast<size_t>(j)].from != l[static_cast<size_t>(i + off)].from) {
        is_loop = false;
        break;
      }
    }
    if (!is_loop) continue;
    const int rest = nr - (i + off);
    if (rest > 0) {
      BranchIterations& it = iter[static_cast<size_t>(i + off)];
      ++it.nr_loop_iter;
      it.cycles = 0;
      for (int k = 0; k < off; ++k) it.cycles += (l[static_cast<size_t>(i + k)].flags >> 4) & 0xffff;
      std::copy(iter.begin() + i + off, iter.begin() + i + off + rest, iter.begin() + i);
      std::copy(l.begin() + i + off, l.begin() + i + off + rest, l.begin() + i);
    }
    nr -= off;
  }
  return static_cast<size_t>(nr);
}

namespace {

template <typename List, typename Value>
bool listed(const List& list, const Value& v) {
  return list.empty() || std::find(list.begin(), list.end(), v) != list.end();
}

bool time_event(const perfdata::PerfEventAttr& a) {
  return a.type == perfdata::kTypeSoftware && (a.config == 0 || a.config == 1);  // cpu-clock, task-clock
}

}  // namespace

struct ReportBuilder::Impl {
  Impl(perfdata::Reader& r, session::Machine& m, symbols::Symbolizer& s, symbols::DwarfUnwinder& u,
       SymbolPreloader& p, ReportBuildOptions o)
      : reader(r), machine(m), symbolizer(s), unwinder(u), preloader(p), opt(std::move(o)),
        selection(opt.dsos, opt.symbols), resolver(m, &s), unwind(resolver), read_splitter(r) {
    use_parent = has_key(SortKey::kParent);
    use_srcline = has_key(SortKey::kSrcline);
    use_trace = has_key(SortKey::kTrace) && static_cast<bool>(opt.trace_text);
    use_cpu = has_key(SortKey::kCpu);
  }

  bool has_key(SortKey k) const { return std::find(opt.keys.begin(), opt.keys.end(), k) != opt.keys.end(); }

  Hist make_hist(unsigned members) const {
    Hist h(opt.keys, members);
    h.collapse_by_comm(opt.comm_sort_key);
    if (frame_key() != FrameKey::kFunction) h.use_frame_key(frame_key());
    h.use_tree_thread(util::job_count(opt.jobs) > 1);
    if (opt.count_chain_samples) h.count_chain_samples();
    if (opt.cpu_modes) h.count_cpu_modes();
    return h;
  }

  const session::Map* find_map(const session::Thread* t, uint8_t cpumode, uint64_t addr) {
    return resolver.find_map(t, cpumode, addr);
  }

  // A pipe names its events and groups in the stream (HEADER_ATTR, HEADER_FEATURE), so the tables
  // are (re)built from what the reader knows when the first sample comes, and grown for an
  // event announced after that.
  void setup_events() {
    const size_t nr_attrs = reader.attrs().size();
    if (nr_attrs == groups_known_for && group_slots.size() >= nr_attrs) return;
    drain_combos();
    groups_known_for = nr_attrs;
    stack_copies = std::any_of(reader.attrs().begin(), reader.attrs().end(), [](const perfdata::EventAttr& ea) {
      return symbols::DwarfUnwinder::copies_stacks(ea.attr);
    });
    group_slots.clear();
    for (size_t i = 0; i < nr_attrs; ++i) group_slots.push_back({i, 0});
    group_size.assign(nr_attrs, 0);
    for (const auto& g : reader.features().group_desc) {
      if (g.nr_members < 2 || g.leader_idx >= nr_attrs || g.nr_members > nr_attrs - g.leader_idx) continue;
      group_size[g.leader_idx] = g.nr_members;
      if (opt.no_group) continue;
      for (unsigned m = 0; m < g.nr_members; ++m) group_slots[g.leader_idx + m] = {g.leader_idx, m};
    }
    for (size_t i = 0; i < nr_attrs; ++i) {
      const unsigned members = !opt.no_group && group_size[i] ? group_size[i] : 1;
      if (i < events.size()) {
        // Nothing was counted yet for an event whose group only now became known.
        if (events[i].samples == 0 && events[i].hist.members() != members) {
          events[i] = {make_hist(members), 0, 0};
          order_risks[i] = events[i].hist.order_risk();
        }
      } else {
        events.push_back({make_hist(members), 0, 0});
        order_risks.push_back(events.back().hist.order_risk());
      }
    }
  }

  // perf decides on Children/Self from the events known when it starts; pipe files name theirs
  // in the stream, so the first sample decides there.
  void decide_children() {
    for (const auto& a : reader.attrs()) any_callchain |= (a.attr.sample_type & perfdata::kSampleCallchain) != 0;
    children = any_callchain ? !opt.no_children : opt.children;
    // perf 6.1 checks for callchains before a pipe has named its events, finds none and turns
    // the Children column off; the caller order it chose for it stays.
    if (reader.is_pipe()) children = false;
    // --hierarchy shows Self alone, as perf, whose chains keep the order chosen for Children.
    if (opt.hierarchy) children = false;
    decided = true;
  }

  const std::string* srcline_of(const session::Map* map, int32_t pid, uint64_t ip, bool frame) {
    return srclines.get(symbolizer, map, pid, ip, frame);
  }

  // Chains keyed by address (-g ...,address, --branch-history): frames told apart by address, each
  // with its srcline.
  bool address_keyed() const { return opt.branch_history || opt.address_frames; }
  // Chains keyed by srcline (-g ...,srcline): frames told apart by their srcline where they have
  // one (perf 6.1 has none where it would show an address or offset instead), else by function;
  // each shown with it.
  bool srcline_keyed() const { return frame_key() == FrameKey::kSrcline; }
  FrameKey frame_key() const {
    return address_keyed() ? FrameKey::kAddress : opt.srcline_frames ? FrameKey::kSrcline : FrameKey::kFunction;
  }
  // Whether the chains' frames carry their srclines (either key above).
  bool chain_texts_kept() const { return frame_key() != FrameKey::kFunction; }
  // A chain frame's srcline as the key shows it: perf's callchain_srcline(), for any frame with a
  // map by srcline (the key needs it), for a named one by address (only those show it).
  const std::string* chain_frame_srcline(const session::Map* map, const symbols::Symbol* sym, int32_t pid, uint64_t ip) {
    if (!map || (!sym && !srcline_keyed())) return nullptr;
    return srclines.get(symbolizer, map, pid, ip, false, false, srcline_keyed());
  }

  // Whether chains are walked from the root (caller order): -G always; else -g's "caller" or
  // "callee", whose default is caller order when perf accumulates (children) and callee without.
  bool root_first(bool cumulating) const {
    if (opt.inverted) return true;
    return cumulating ? opt.chain_order != CallchainSpec::Order::kCallee : opt.chain_order == CallchainSpec::Order::kCaller;
  }

  // One frame of the chain the graphs show (`c`: its entry's keys); in chains keyed by address
  // with its srcline beside it.
  // `text`: the frame's own srcline where the address's is not it (a function inlined there).
  void push_chain_frame(const Location& loc, const session::Map* map, int32_t pid, uint64_t ip,
                        const std::string* text = nullptr) {
    chain.push_back(CallFrame{ip, loc.dso, loc.sym, loc.sym_start});
    if (chain_texts_kept()) chain_texts.push_back(text ? text : chain_frame_srcline(map, loc.sym, pid, ip));
  }

  // A text kept for the life of the report (the srclines of inline frames in chains keyed by
  // address).
  const std::string* kept_text(const std::string& s) { return &*kept_texts.insert(s).first; }

  // The srcline key of a callchain entry's entry (--children): perf works it out from the raw
  // address when it needs it; in chains keyed by address the entry takes the frame's own text,
  // known from the start.
  const std::string* chain_entry_srcline(const session::Map* map, int32_t pid, uint64_t ip, bool* eager) {
    if (!chain_texts_kept() || !map) return srcline_of(map, pid, ip, true);
    const std::string* text = srclines.get(symbolizer, map, pid, ip, false, false, srcline_keyed());
    if (!text) return srcline_of(map, pid, ip, true);  // none in the chain (by srcline): worked out later
    *eager = true;
    return text;
  }

  // The parent key: the first symbol of the chain (`callers`, in the order perf walks it) the
  // pattern matches; every entry of the sample (its own and, with --children, its callers')
  // carries it, and -x hides them all without one (their entries are made from `self`).
  void take_parent(HistEntry& self) {
    for (const BatchCaller& c : callers) {
      if (c.loc.sym && is_parent(c.loc.sym)) {
        self.parent = c.loc.sym->name();
        break;
      }
    }
    self.filtered = self.filtered || (opt.exclude_other && self.parent.empty());
  }

  bool is_parent(const symbols::Symbol* sym) {
    auto [it, fresh] = parent_match.try_emplace(sym, false);
    if (fresh) {
      const std::string name(sym->name());
      it->second = opt.parent_regex && std::regex_search(name, *opt.parent_regex);
    }
    return it->second;
  }

  struct ComboBatch;
  // Adds one batch of combinations to the hists, in the order each was first seen. Runs on the
  // adding thread when there is one, else here; reads the batch, the hists, and nothing the
  // sample path changes while it runs (setup_events() and KSYMBOL records wait for it).
  void add_batch(ComboBatch& b) {
    // Where perf's walks may miss (no total order), a repeated combination is added sample by
    // sample in its place; while no entry has been made since its group's last add, the same
    // entries are credited again without a lookup (Hist::add_again).
    std::vector<Combo>& combos = b.combos;
    repeated.assign(combos.size(), 0);
    for (size_t i = 0; i < combos.size(); ++i) {
      if (combos[i].group != i) repeated[combos[i].group] = 1;
    }
    if (add_memos.size() < combos.size()) add_memos.resize(combos.size());
    for (size_t i = 0; i < combos.size(); ++i) {
      Combo& c = combos[i];
      Hist& h = events[c.leader].hist;
      Hist::AddMemo& memo = add_memos[c.group];
      if (c.group != i && h.add_again(memo, c.period, b.children, c.member, c.count)) continue;
      // The caller entries as Hist takes them: the combination's own entry with each frame's
      // fields (node_entry() made them so).
      caller_scratch.resize(c.callers_size);
      for (uint32_t j = 0; j < c.callers_size; ++j) {
        const BatchCaller& bc = b.callers[c.callers_at + j];
        HistEntry& e = caller_scratch[j];
        e = c.self;
        e.loc = bc.loc;
        e.srcline = bc.srcline;
        e.srcline_eager = bc.srcline_eager;
      }
      const std::span<const HistEntry> c_callers(caller_scratch);
      if (c.with_chain) {
        std::span<const ChainBranch> branches;
        if (c.with_branches) branches = std::span<const ChainBranch>(b.branches.data() + c.chain_at, c.chain_size);
        std::span<const std::string* const> texts;
        if (c.chain_at + c.chain_size <= b.texts.size()) {
          texts = std::span<const std::string* const>(b.texts.data() + c.chain_at, c.chain_size);
        }
        h.add_with_chain(c.self, c.period, b.children, c_callers,
                         std::span<const CallFrame>(b.chains.data() + c.chain_at, c.chain_size), c.member, c.count,
                         branches, texts);
      } else {
        h.add(c.self, c.period, b.children, c_callers, c.member, c.count);
      }
      if (repeated[c.group]) h.remember_add(&memo);
    }
    for (size_t i = 0; i < combos.size(); ++i) {
      if (repeated[i]) add_memos[i].valid = false;
    }
    b.clear();
  }

  // Ends the batch being filled: it is added (on the adding thread, while the next one fills)
  // and no later sample joins its combinations.
  void flush_combos() {
    combo_index.clear();
    combo_at.clear();
    last.id = util::WordKeyMap::kAbsent;
    batch_bytes = 0;
    batch_made = batch_joined = 0;
    if (filling.combos.empty()) return;
    filling.children = children;
    if (!adder.threaded()) {
      add_batch(filling);
      return;
    }
    adder.submit(filling);
  }
  // flush_combos(), then waits until every batch is in the hists: before the events or the
  // kernel's symbols change, and at the end.
  void drain_combos() {
    flush_combos();
    adder.wait_idle();
  }

  // `read`: one of the samples perf makes of a SAMPLE_READ record (its event and period).
  void on_one_sample(const perfdata::Record& rec, const ReadDelivery* read);
  // ReplayHandlers::on_repeat: the sample before it applied again when its key would be the same
  // (the thread's comm and the address spaces' versions unchanged), else as any sample.
  void on_repeat(const perfdata::Record& rec, uint64_t time);
  // A sample that joins the combination `id` of the batch being filled.
  void join_combo(uint32_t id, uint64_t period, uint64_t stack_user);
  void run(const std::function<void(uint64_t)>& on_progress);

  perfdata::Reader& reader;
  session::Machine& machine;
  symbols::Symbolizer& symbolizer;
  symbols::DwarfUnwinder& unwinder;
  SymbolPreloader& preloader;
  const ReportBuildOptions opt;
  const SampleSelection selection;  // --dsos, -S
  symbols::Resolver resolver;
  bool use_parent = false, use_srcline = false, use_trace = false, use_cpu = false;
  std::unordered_set<std::string> kept_texts;     // see kept_text()
  std::vector<const std::string*> inline_texts;  // walk_frame's, by inline frame

  std::vector<EventHist> events;
  std::vector<GroupSlot> group_slots;  // by attr index
  std::vector<unsigned> group_size;    // by attr index
  size_t groups_known_for = 0;         // attrs the group tables were built from
  bool decided = false;
  bool children = false;
  bool any_callchain = false;

  UnwindStatsCollector unwind;
  session::DeferredCallchains::Stats deferred;
  uint64_t lost_samples = 0;
  std::vector<std::string> problems;

  // A caller entry as the sample path and a batch hold it: only what sets it apart from its
  // combination's own entry (node_entry() makes these, add_batch() the entry from them), 56
  // bytes where the whole entry takes 136 (copying that for every frame of a new stack was a
  // sixth of the main thread's time on a system-wide recording).
  struct BatchCaller {
    Location loc;
    const std::string* srcline;
    bool srcline_eager;
  };
  // Scratch of one sample, kept for their capacity.
  perfdata::Sample sample;
  std::vector<session::CallchainFrame> all_frames, stats_frames, user_frames, frames;
  std::vector<symbols::ResolvedFrame> stats_at, frames_at;  // parallel to stats_frames, frames
  std::vector<BatchCaller> callers;  // the sample's caller entries, in the walk's order
  std::vector<CallFrame> chain;
  UnwindStatsCollector::StackVerdict verdict;
  std::vector<uint64_t> key;

  SrclineTexts srclines;  // the srcline key's, and those shown in chains keyed by address
  // --branch-history scratch: the sample's branches in chain order, their loop counts, and what
  // each frame of the chain says of its branch (parallel to `chain`).
  std::vector<perfdata::BranchEntry> branch_entries;
  std::vector<BranchIterations> branch_iters;
  std::vector<ChainBranch> chain_branches;
  std::vector<const std::string*> chain_texts;  // --branch-history: the srcline of each frame of `chain`
  std::unordered_map<const symbols::Symbol*, bool> parent_match;
  std::unordered_set<std::string> trace_texts;
  std::string trace_buf;

  // Samples alike in everything the histogram keys and chains depend on (event, thread and comm,
  // ip, the raw chain and unwound frames, the versions of the address spaces they were resolved
  // in) are resolved once and added together: a batch of such combinations is added to the
  // hists in the order each was first seen, which creates entries and tree nodes in the order
  // adding sample by sample would (the sample that creates an entry is the first of its
  // combination), so perf's tie orders are kept. Batches are bounded by the frames they hold.
  struct Combo {
    size_t leader;
    unsigned member;
    bool with_chain;
    bool with_branches;  // the batch's branches hold the chain's branch frames (at chain_at)
    HistEntry self;
    // The combination's caller entries and chain frames: ranges of the batch's shared arrays, so
    // that a batch of stacks that rarely repeat (-a, random recursion) allocates nothing per stack.
    uint32_t callers_at, callers_size;
    uint32_t chain_at, chain_size;
    bool dsoless;  // some entry has no DSO (see OrderRisk::total_with_dsos)
    UnwindStatsCollector::StackVerdict verdict;
    uint64_t period = 0;
    uint64_t count = 0;
    uint32_t group = 0;  // the combination's first in the batch (itself, or the one it repeats)
  };
  // The combinations of a batch, with their caller entries and chain frames in shared arrays.
  struct ComboBatch {
    std::vector<Combo> combos;
    std::vector<BatchCaller> callers;  // only when cumulating: Hist reads them for nothing else
    std::vector<CallFrame> chains;
    std::vector<ChainBranch> branches;  // parallel to chains once a combo has branches
    std::vector<const std::string*> texts;  // the same for frame srclines (--branch-history)
    bool children = false;  // cumulate (the mode decided before the first sample)
    void clear() {
      combos.clear();
      callers.clear();
      chains.clear();
      branches.clear();
      texts.clear();
    }
  };
  ComboBatch filling;  // the samples coming in
  // The adding thread's: what the last add of each group credited, and which groups repeat.
  std::vector<Hist::AddMemo> add_memos;
  std::vector<uint8_t> repeated;
  std::vector<HistEntry> caller_scratch;
  util::WordKeyMap combo_index;  // key -> its id (of the batch being filled)
  std::vector<uint32_t> combo_at;  // key id -> the key's first combination in filling.combos
  // What the last sample went into, for a repeat of it (on_repeat): its combination's id in
  // combo_index (kAbsent: it went into none, or the index was cleared since), and what else its
  // key was made of.
  struct LastSample {
    uint32_t id = util::WordKeyMap::kAbsent;
    const session::Thread* thread = nullptr;
    const std::string* comm = nullptr;
    uint64_t maps_version = 0, kernel_version = 0;
    EventHist* ev = nullptr;
    uint64_t period = 0, stack_user = 0;
  } last;
  // By event (as `events`): what the entries of every combination made so far say of the order
  // of each hist's keys. The hists know it for the entries already added; the combinations
  // still held are noted here as they are made.
  std::vector<OrderRisk> order_risks;
  size_t batch_bytes = 0;  // what `filling` and its keys in combo_index hold, about
  // A batch ends when it holds `batch_budget` bytes; with the adding thread up to 1 +
  // Adder::kDepth batches are alive (one filling, the others queued or being added). Every batch
  // resolves again the stacks that earlier batches resolved (on fp, 47,748 distinct stacks made
  // 400,176 combinations in batches of 16K frames), so a larger batch pays where samples repeat
  // their stacks, and only costs memory where they do not (-a on a busy machine). The budget
  // follows what the last batch saw: doubled when its samples were three times its combinations
  // or more, halved below one and a half. Files whose events copy user stacks keep the smallest
  // batches: unwinding each costs far more than resolving its frames again, and their long chains
  // made the dwarf recipe's peak 7 MB higher (a fifth) with batches of 3 MiB, for no time saved.
  static constexpr size_t kBatchMinBytes = size_t{256} << 10;
  static constexpr size_t kBatchMaxBytes = size_t{4} << 20;
  size_t batch_budget = size_t{1} << 20;
  size_t batch_made = 0;    // combinations made in `filling`
  size_t batch_joined = 0;  // samples that joined one of them
  bool stack_copies = false;  // some event copies user stacks (setup_events())
  void adapt_batch_budget() {
    if (batch_joined >= 2 * batch_made) {
      batch_budget = std::min(2 * batch_budget, kBatchMaxBytes);
    } else if (2 * batch_joined < batch_made) {
      batch_budget = std::max(batch_budget / 2, kBatchMinBytes);
    }
  }

  SampleReadSplitter read_splitter;

  // The thread that adds batches to the hists, in the order they were filled, while the next ones
  // fill (-j above 1). Up to kDepth full batches wait for it or are being added: with one, this
  // thread waited for it a tenth of the time on the sys recipe (report --no-children), whenever a
  // batch took it longer than filling the next one took here (both share two cores with the
  // reading and the tree-building threads). Declared last, so that it stops before anything it
  // uses goes.
  class Adder {
   public:
    static constexpr size_t kDepth = 3;
    Adder(unsigned jobs, std::function<void(ComboBatch&)> add)
        : threaded_(util::job_count(jobs) > 1), add_(std::move(add)) {
      for (ComboBatch& b : pool_) free_.push_back(&b);
    }
    ~Adder() { stop(); }
    bool threaded() const { return threaded_; }
    // Queues the full batch `filling` (whose arrays it takes, giving back those of an added
    // batch, empty): waits while kDepth batches are queued or being added. Rethrows what adding
    // an earlier batch threw, first (`filling` is then left as it is).
    void submit(ComboBatch& filling) {
      std::unique_lock lock(mu_);
      free_cv_.wait(lock, [&] { return !free_.empty() || error_; });
      if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
      ComboBatch* b = free_.back();
      free_.pop_back();
      std::swap(*b, filling);
      queue_.push_back(b);
      if (!thread_.joinable()) {
        thread_ = std::thread([this] {
          pthread_setname_np(pthread_self(), "tperf-add");  // cosmetic: names it in profiles
          work();
        });
      }
      work_cv_.notify_one();
    }
    // Waits until every batch queued is added; rethrows what adding one threw.
    void wait_idle() {
      std::unique_lock lock(mu_);
      idle_cv_.wait(lock, [&] { return queue_.empty() && !busy_; });
      if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    }
    void stop() {
      {
        std::lock_guard lock(mu_);
        if (!thread_.joinable()) return;
        stopping_ = true;
      }
      work_cv_.notify_one();
      thread_.join();
    }

   private:
    void work() {
      std::unique_lock lock(mu_);
      for (;;) {
        work_cv_.wait(lock, [&] { return !queue_.empty() || stopping_; });
        if (queue_.empty()) return;
        ComboBatch* b = queue_.front();
        queue_.pop_front();
        busy_ = true;
        lock.unlock();
        std::exception_ptr error;
        try {
          add_(*b);
        } catch (...) {
          error = std::current_exception();
        }
        b->clear();  // (add_ clears it unless it threw)
        lock.lock();
        if (error && !error_) error_ = error;
        busy_ = false;
        free_.push_back(b);
        free_cv_.notify_one();
        if (queue_.empty()) idle_cv_.notify_all();
      }
    }

    const bool threaded_;
    std::function<void(ComboBatch&)> add_;
    ComboBatch pool_[kDepth];
    std::mutex mu_;
    std::condition_variable work_cv_, idle_cv_, free_cv_;
    std::deque<ComboBatch*> queue_;  // full, oldest first
    std::vector<ComboBatch*> free_;  // empty, for submit() to swap with
    bool busy_ = false, stopping_ = false;
    std::exception_ptr error_;
    std::thread thread_;
  };
  Adder adder{opt.jobs, [this](ComboBatch& b) { add_batch(b); }};
};

void ReportBuilder::Impl::join_combo(uint32_t id, uint64_t period, uint64_t stack_user) {
  Combo& c = filling.combos[combo_at[id]];
  const OrderRisk& risk = order_risks[c.leader];
  ++batch_joined;
  if (risk.total() || (!c.dsoless && risk.total_with_dsos())) {
    ++c.count;
    c.period += period;
  } else {
    // perf's walk may miss the entries of the first one now: this sample goes in on its own,
    // in its place (the batch holds the resolved entries and chain already).
    Combo again = c;
    again.group = combo_at[id];
    again.count = 1;
    again.period = period;
    again.verdict = {};
    batch_bytes += sizeof(Combo);
    if (opt.summary) {
      unwind.add_stack_copy(sample, stack_user);
      unwind.add(c.verdict);
    }
    filling.combos.push_back(std::move(again));
    return;
  }
  if (opt.summary) {
    unwind.add_stack_copy(sample, stack_user);
    unwind.add(c.verdict);
  }
}

void ReportBuilder::Impl::on_repeat(const perfdata::Record& rec, uint64_t) {
  const LastSample& l = last;
  if (l.id == util::WordKeyMap::kAbsent || l.thread->comm() != l.comm ||
      (l.thread->maps() ? l.thread->maps()->version() : 0) != l.maps_version ||
      machine.kernel_maps().version() != l.kernel_version) {
    return on_one_sample(rec, nullptr);
  }
  ++l.ev->samples;
  l.ev->period += l.period;
  join_combo(l.id, l.period, l.stack_user);
}

void ReportBuilder::Impl::on_one_sample(const perfdata::Record& rec, const ReadDelivery* read) {
  last.id = util::WordKeyMap::kAbsent;
  int ai = read ? read->attr_index : reader.attr_index_of(rec);
  if (ai < 0) return;
  const OffCpuTracker* off_cpu = opt.off_cpu;
  const std::optional<OffCpuState>& wanted_state = opt.wanted_state;
  // --off-cpu: only the switches, each weighing its interval; the offcpu-time event's samples
  // already carry their time as period.
  std::optional<uint64_t> off_cpu_period;
  int hist_ai = ai;  // the section the sample counts in
  if (off_cpu && !off_cpu->is_offcpu_time_event(ai) && !off_cpu->is_switch_event(ai)) {
    if (opt.wall_section < 0 || !time_event(reader.attrs()[static_cast<size_t>(ai)].attr)) return;
    // An on-CPU time sample: its period is its time.
    hist_ai = opt.wall_section;
  } else if (off_cpu && !off_cpu->is_offcpu_time_event(ai)) {
    const OffCpuInterval* iv = off_cpu->interval_of(rec);
    if (wanted_state && (!iv || iv->state != *wanted_state)) return;
    // A thread's final switch (it exited) is a switch without time.
    off_cpu_period = iv ? iv->duration() : 0;
  }
  if (!decided) decide_children();
  // The chain stays in the record until this sample makes a combination of its own (most join
  // one): then it is copied out. Not for stack copies, whose unwinding reads it first.
  const perfdata::PerfEventAttr& attr = reader.attrs()[static_cast<size_t>(ai)].attr;
  const bool chain_in_place = !symbols::DwarfUnwinder::copies_stacks(attr);
  reader.decode_sample(rec, sample, chain_in_place ? perfdata::SampleParts::kChainInPlace : perfdata::SampleParts::kAll);
  if (wanted_state && off_cpu->is_offcpu_time_event(ai) && off_cpu->offcpu_time_state(sample, ai) != *wanted_state) return;
  if (time_skipped(opt.time_ranges, sample.time)) return;
  // --cpu too drops samples before anything counts them, as perf does.
  if (!listed(opt.cpus, sample.has(perfdata::kSampleCpu) ? static_cast<int32_t>(sample.cpu) : -1)) return;
  // Pipe files announce their events as they go.
  setup_events();
  EventHist& ev = events[static_cast<size_t>(hist_ai)];
  // A group member's samples go into its leader's hist, in the member's column.
  const GroupSlot slot = group_slots[static_cast<size_t>(hist_ai)];
  session::Thread& thread = machine.findnew_thread(static_cast<int32_t>(sample.pid), static_cast<int32_t>(sample.tid));
  const uint8_t cpumode = rec.misc & perfdata::kMiscCpumodeMask;
  const bool has_chain = sample.has(perfdata::kSampleCallchain);
  const bool graph = opt.graph, folded = opt.folded, flat = opt.flat;
  const bool summary = opt.summary;
  // --call-graph dwarf: the user frames unwound from the stack copy, after the kernel's.
  user_frames.clear();
  if ((summary || children || graph || folded || flat || use_parent) && has_chain) {
    unwinder.append_user_frames(attr, thread, sample, 4096, &user_frames);
  }
  // Without PERIOD in the samples every one stands for the fixed period of its event (-c).
  const uint64_t period = read               ? read->period
                          : off_cpu_period ? *off_cpu_period
                          : sample.has(perfdata::kSamplePeriod) ? sample.period
                                                                : attr.sample_period;
  ++ev.samples;
  ev.period += period;
  // -s trace: the sample's trace text (script's trace field; perf leaves the cpu at 0), interned.
  const std::string* trace_text = nullptr;
  if (use_trace && attr.type == perfdata::kTypeTracepoint && sample.has(perfdata::kSampleRaw)) {
    trace_buf.clear();
    opt.trace_text(trace_buf, reader.attrs()[static_cast<size_t>(ai)], sample, thread);
    trace_text = &*trace_texts.insert(trace_buf).first;
  }
  // The key: its fixed head, the unwound frames and the branches written in place, each after
  // its length; then the raw chain, hashed and compared where it is (not copied). The head's
  // lengths decide where it ends, so equal keys are split alike.
  // --branch-history: the branches make the chain, so they are part of the key. perf resolves a
  // chain for a sample with a callchain, or for one with branches when the file's header says it
  // has branch stacks (then it also counts the branches in the chains' nodes); a pipe's never does.
  const bool branch_chain = opt.branch_history && sample.has(perfdata::kSampleBranchStack) &&
                            (opt.branch_chains || has_chain);
  const size_t branch_words = branch_chain ? 1 + 3 * sample.branches.size() : 0;
  key.resize(10 + 1 + user_frames.size() + branch_words);
  uint64_t* k = key.data();
  *k++ = static_cast<uint64_t>(ai);  // the event: its attr decides the unwinding
  const std::string* const comm = thread.comm();
  const uint64_t maps_version = thread.maps() ? thread.maps()->version() : 0;
  const uint64_t kernel_version = machine.kernel_maps().version();
  *k++ = reinterpret_cast<uintptr_t>(comm);
  *k++ = static_cast<uint64_t>(static_cast<uint32_t>(thread.pid())) << 32 | static_cast<uint32_t>(thread.tid());
  *k++ = use_cpu && sample.has(perfdata::kSampleCpu) ? sample.cpu : 0;
  *k++ = sample.ip;
  *k++ = cpumode;
  *k++ = maps_version;
  *k++ = kernel_version;
  *k++ = reinterpret_cast<uintptr_t>(trace_text);
  *k++ = has_chain ? sample.chain().size() : ~uint64_t{0};  // no chain is not an empty one
  *k++ = user_frames.size();
  for (const auto& f : user_frames) *k++ = f.ip;
  if (branch_chain) {
    *k++ = sample.branches.size();
    for (const perfdata::BranchEntry& b : sample.branches) {
      *k++ = b.from;
      *k++ = b.to;
      *k++ = b.flags;
    }
  }
  std::span<const uint64_t> raw_chain = has_chain ? sample.chain() : std::span<const uint64_t>();
  const uint64_t key_hash = util::WordKeyMap::hash(key, raw_chain);
  // For a repeat of this sample: what its key was made of besides the record's bytes.
  auto remember = [&](uint32_t id) {
    last = {id, &thread, comm, maps_version, kernel_version, &ev, period, attr.sample_stack_user};
  };
  if (const uint32_t id = combo_index.find(key, raw_chain, key_hash); id != util::WordKeyMap::kAbsent) {
    join_combo(id, period, attr.sample_stack_user);
    remember(id);
    return;
  }
  if (sample.chain_in_place.data()) {
    // The rest of the record is decoded already: only the chain is copied out of it.
    sample.callchain.assign(sample.chain_in_place.begin(), sample.chain_in_place.end());
    sample.chain_in_place = {};
    raw_chain = sample.callchain;
  }
  const symbols::ResolvedFrame sample_at = resolver.resolve(&thread, cpumode, sample.ip);
  const session::Map* sample_map = sample_at.map;
  HistEntry self = sample_entry(machine, thread, sample, cpumode, sample_at);
  if (opt.hide_unresolved && !self.loc.sym) {
    // Never counted (perf leaves it out before its histogram sees it); nor kept in the index,
    // so that a sample alike comes here again.
    --ev.samples;
    ev.period -= period;
    return;
  }
  if (use_srcline) self.srcline = srcline_of(sample_map, thread.pid(), sample.ip, false);
  self.trace = trace_text;
  bool all_frames_ok = false;
  stats_frames.clear();
  if (summary) {
    // The quality block covers every sample of the file, the filtered-out ones too, and
    // whole chains whatever --max-stack says.
    // Each frame is resolved once, here: the block reads its symbol, and the walk below its
    // map and symbol (stats_at, parallel to stats_frames).
    stats_at.clear();
    if (has_chain) {
      all_frames_ok = session::resolve_callchain(machine, &thread, sample, ~0u, &all_frames);
      // The histogram below needs the machine's maps as they are; here kernel frames past
      // the recorded kernel map count as the kernel's too (the resolver's map of a frame
      // without one, which the walk looks up alike).
      stats_frames = all_frames;
      for (auto& f : stats_frames) {
        stats_at.push_back(resolver.resolve(&thread, f.cpumode, f.ip, f.map));
        if (!f.map) f.map = stats_at.back().map;
      }
      if (all_frames_ok) {
        for (const session::CallchainFrame& f : user_frames) {
          stats_frames.push_back(f);
          stats_at.push_back(resolver.resolve(&thread, f.cpumode, f.ip, f.map));
        }
      }
    } else {
      stats_frames.assign(1, {sample.ip, cpumode, sample_map});
      stats_at.assign(1, sample_at);
    }
    verdict = unwind.classify(sample.callchain, has_chain, thread.pid(), attr.sample_max_stack, stats_frames, stats_at);
    unwind.add_stack_copy(sample, attr.sample_stack_user);
    unwind.add(verdict);
  }
  // Without --children, perf draws chains from the sample up (callee order) by default;
  // perf 6.1's -G/--inverted asks for caller order whatever -g says.
  const bool cumulate_order = children || ((reader.is_pipe() || opt.hierarchy) && !opt.no_children);
  const bool caller_order = root_first(cumulate_order);
  auto symbol_listed = [&] {
    return !selection.selects_symbols() ||
           selection.symbol_selected(self.loc.sym, find_map(&thread, cpumode, sample.ip), sample.ip);
  };
  self.filtered = !listed(opt.comms, std::string_view(*self.comm)) || !listed(opt.pids, self.pid) ||
                  !listed(opt.tids, self.tid) || !selection.dso_selected(self.loc.dso) || !symbol_listed();
  callers.clear();
  chain.clear();
  chain_texts.clear();
  chain_branches.clear();
  const bool want_chain = children || graph || folded || flat || use_parent;
  const bool chain_entries = children || graph || folded || flat;  // else walked for the parent alone
  // --branch-history with the file's branch stacks: perf's cursor holds the sample's branches
  // first (each its target, then where it was taken from; newest first, or oldest first when
  // chains are walked from the root), then the part of the callchain they do not stand for.
  const bool branch_nodes = want_chain && branch_chain;
  size_t chain_begin = 0, chain_end = has_chain ? sample.callchain.size() : 0;
  branch_entries.clear();
  size_t kept_branches = 0;
  if (branch_nodes && sample.branches.size() <= 127) {  // perf skips a longer stack as corrupted
    // perf decided the order while Children was still on (it goes off for files without
    // callchains later): oldest branch first unless --no-children or -g callee say otherwise.
    const bool oldest_first = root_first(!opt.no_children);
    const size_t nr = std::min<size_t>(opt.max_stack, sample.branches.size());
    size_t first_call = 0;
    for (size_t i = 0; i < nr; ++i) {
      if (oldest_first) {
        branch_entries.push_back(sample.branches[sample.branches.size() - 1 - i]);
        continue;
      }
      const perfdata::BranchEntry& b = sample.branches[i];
      branch_entries.push_back(b);
      // Newest first, perf steps over the next callchain entry for each branch if that entry is
      // a context marker or the branch's return address (its source at most 8 bytes before).
      if (has_chain && first_call < sample.callchain.size()) {
        const uint64_t ip = sample.callchain[first_call];
        if (ip >= perfdata::kContextMax || (b.from < ip && b.from >= ip - 8)) ++first_call;
      }
    }
    kept_branches = remove_branch_loops(branch_entries, branch_iters);
    // It then walks as many callchain entries fewer as it kept branches: the innermost ones
    // from the root, the outermost ones from the stepped-over leaf.
    const size_t walked = chain_end > kept_branches ? chain_end - kept_branches : 0;
    if (oldest_first) {
      chain_begin = chain_end - walked;
    } else {
      chain_begin = first_call;
      chain_end = walked;
    }
  }
  size_t unwound = 0;  // frames at the chain's end (before the caller-order reversal) from the stack copy
  bool have_frames = false;
  frames.clear();
  frames_at.clear();  // when not empty: each frame of `frames` as resolved above (stats_at)
  if (want_chain && has_chain) {
    if (branch_nodes) {
      have_frames = session::resolve_callchain_range(machine, &thread, sample, chain_begin, chain_end, caller_order,
                                                     opt.max_stack, &frames);
    } else if (all_frames_ok) {
      // The whole chain was resolved for the quality block.
      frames = all_frames;
      frames_at.assign(stats_at.begin(), stats_at.begin() + static_cast<ptrdiff_t>(all_frames.size()));
      have_frames = true;
    } else {
      // perf walks the chain in the display order and stops after --max-stack frames: the
      // innermost ones for callee order, the outermost for caller order.
      have_frames = session::resolve_callchain(machine, &thread, sample, caller_order ? ~0u : opt.max_stack, &frames);
    }
    if (frames.size() > opt.max_stack) {
      if (caller_order) {
        frames.erase(frames.begin(), frames.end() - opt.max_stack);
        if (!frames_at.empty()) frames_at.erase(frames_at.begin(), frames_at.end() - opt.max_stack);
      } else {
        frames.resize(opt.max_stack);
        if (!frames_at.empty()) frames_at.resize(opt.max_stack);
      }
    }
    if (have_frames) {
      unwound = std::min<size_t>(opt.max_stack, user_frames.size());
      frames.insert(frames.end(), user_frames.begin(), user_frames.begin() + static_cast<ptrdiff_t>(unwound));
      if (!frames_at.empty()) {
        // The unwound frames follow the chain's in stats_at (the chain was whole).
        const auto user_at = stats_at.begin() + static_cast<ptrdiff_t>(all_frames.size());
        frames_at.insert(frames_at.end(), user_at, user_at + static_cast<ptrdiff_t>(unwound));
      }
    } else {
      // perf drops a chain with a context it does not know, branches and all.
      kept_branches = 0;
    }
  }
  // -x: an entry without a parent is hidden (perf looks for one only with the parent key).
  if (opt.exclude_other && (!use_parent || !have_frames)) self.filtered = true;
  // The cursor in perf's walk: from the root for caller graphs (the default). perf takes a
  // frame's level from the space its map is in; a frame without a map keeps the level of the
  // frame walked before it (the sample's for the first).
  if (caller_order) {
    std::reverse(frames.begin(), frames.end());
    std::reverse(frames_at.begin(), frames_at.end());
  }
  char level = self.loc.level;
  // Without --children the callers' entries go nowhere (Hist reads them only when cumulating)
  // but into the parent key: the chain alone is kept then.
  const bool keep_callers = children || use_parent;
  auto push_entry = [&](BatchCaller& c, const session::Map* fmap, uint64_t ip, const symbols::Symbol* sym,
                        const ChainBranch* cb, const std::string* text = nullptr) {
    c.loc.sym = sym;
    if (keep_callers) {
      callers.push_back(c);
      // In chains keyed by address an inline frame's entry takes that frame's srcline too.
      if (text && use_srcline && chain_entries && chain_texts_kept()) callers.back().srcline = text;
    }
    push_chain_frame(c.loc, fmap, thread.pid(), ip, text);
    if (kept_branches && opt.branch_chains) chain_branches.push_back(cb ? *cb : ChainBranch{});
  };
  // The entry of one node of the cursor at `ip` in `fmap`; `mapped`: the node has a map, whose
  // level it takes (else it keeps the one before it).
  auto node_entry = [&](const symbols::ResolvedFrame& at, uint8_t mode, uint64_t ip, bool mapped) {
    BatchCaller c{locate(at, mode, ip, true), self.srcline, self.srcline_eager};
    if (use_srcline && chain_entries) c.srcline = chain_entry_srcline(at.map, thread.pid(), ip, &c.srcline_eager);
    if (mapped) {
      level = c.loc.level;
    } else {
      c.loc.level = level;
    }
    return c;
  };
  auto walk_frame = [&](size_t i) {
    const session::CallchainFrame& f = frames[i];
    const symbols::ResolvedFrame at = frames_at.empty() ? resolver.resolve(&thread, f.cpumode, f.ip, f.map) : frames_at[i];
    if (opt.hide_unresolved && !at.at.sym) return;  // -U: perf's cursor never gets the frame
    const session::Map* fmap = at.map;
    BatchCaller c = node_entry(at, f.cpumode, f.ip, f.map != nullptr);
    // perf 6.1 expands the frames it unwound from the stack copy (not the kernel's
    // callchain) into the functions inlined there, innermost first in callee order.
    const bool from_stack = caller_order ? i < unwound : i >= frames.size() - unwound;
    std::span<const symbols::Symbol* const> inlined;
    if (opt.expand_inline && from_stack && fmap && c.loc.sym) inlined = symbolizer.inline_symbols(*fmap, thread.pid(), f.ip);
    // In chains keyed by address each function of the expansion shows its own line: the
    // address's for the innermost, the call's for each one around it (perf's inline list).
    inline_texts.clear();
    if (!inlined.empty() && chain_texts_kept()) {
      const std::vector<symbols::InlineFrame> lines = symbolizer.inline_frames(*fmap, thread.pid(), f.ip);
      if (lines.size() == inlined.size()) {
        for (const symbols::InlineFrame& l : lines) inline_texts.push_back(kept_text(l.srcline));
      }
    }
    auto text_of = [&](size_t k) { return k < inline_texts.size() ? inline_texts[k] : nullptr; };
    if (inlined.empty()) {
      push_entry(c, fmap, f.ip, c.loc.sym, nullptr);
    } else if (caller_order) {
      for (size_t k = inlined.size(); k-- > 0;) push_entry(c, fmap, f.ip, inlined[k], nullptr, text_of(k));
    } else {
      for (size_t k = 0; k < inlined.size(); ++k) push_entry(c, fmap, f.ip, inlined[k], nullptr, text_of(k));
    }
  };
  auto walk_branch = [&](uint64_t addr, const ChainBranch& cb) {
    // perf looks the address up in the kernel's maps, then the process's.
    uint8_t mode = perfdata::kMiscKernel;
    symbols::ResolvedFrame at = resolver.resolve(&thread, mode, addr);
    if (!at.map) {
      mode = perfdata::kMiscUser;
      at = resolver.resolve(&thread, mode, addr);
    }
    if (opt.hide_unresolved && !at.at.sym) return;
    BatchCaller c = node_entry(at, mode, addr, at.map != nullptr);
    push_entry(c, at.map, addr, c.loc.sym, &cb);
  };
  // perf unwinds the stack copy before it resolves the sample's branches and callchain when it
  // walks from the root, after them when from the leaf.
  const size_t frames_first = caller_order ? unwound : 0;
  for (size_t i = 0; i < frames_first; ++i) walk_frame(i);
  for (size_t i = 0; i < kept_branches; ++i) {
    const perfdata::BranchEntry& b = branch_entries[i];
    // A branch from address 0 counts as a "from" for perf at its target too.
    walk_branch(b.to, ChainBranch{true, b.from != 0, b.from, b.to, b.flags, 0, 0});
    walk_branch(b.from, ChainBranch{true, false, b.from, b.to, b.flags, branch_iters[i].nr_loop_iter, branch_iters[i].cycles});
  }
  for (size_t i = frames_first; i < frames.size(); ++i) walk_frame(i);
  // The parent: the first symbol on that walk the pattern matches; every entry of the sample
  // (its own and, with --children, its callers') carries it.
  if (use_parent && (have_frames || branch_nodes)) take_parent(self);
  if (!chain_entries) {
    callers.clear();
    chain.clear();
    chain_branches.clear();
    chain_texts.clear();
  }
  const bool with_chain = (graph || folded || flat) && !chain.empty();
  const bool with_branches = with_chain && chain_branches.size() == chain.size();
  // Every entry the combination will make is noted before it is held, so that later samples
  // alike join it only while perf's walk would find its entries (the callers' make entries only
  // when cumulating).
  OrderRisk& risk = order_risks[slot.leader];
  risk.note(self);
  if (children) {
    for (const BatchCaller& c : callers) risk.note(c.loc);
  }
  // What the combination adds to the batch: itself, its callers (when cumulating), its chain and
  // what goes with it, its key (with the raw chain) in the index, its verdict's DSOs.
  const size_t kept_callers = children ? callers.size() : 0;
  const size_t chain_cost = with_chain ? chain.size() * (sizeof(CallFrame) + sizeof(ChainBranch) * with_branches +
                                                           sizeof(const std::string*) * !chain_texts.empty())
                                       : 0;
  const size_t cost = sizeof(Combo) + kept_callers * sizeof(BatchCaller) + chain_cost +
                      (key.size() + raw_chain.size() + 4) * sizeof(uint64_t) + stats_frames.size() * sizeof(void*);
  if (batch_bytes + cost > (stack_copies ? kBatchMinBytes : batch_budget)) {
    adapt_batch_budget();
    flush_combos();
  }
  batch_bytes += cost;
  ++batch_made;
  remember(combo_index.insert(key, raw_chain, key_hash));
  ComboBatch& b = filling;
  combo_at.push_back(static_cast<uint32_t>(b.combos.size()));
  const auto callers_at = static_cast<uint32_t>(b.callers.size());
  const auto chain_at = static_cast<uint32_t>(b.chains.size());
  b.callers.insert(b.callers.end(), callers.begin(), callers.begin() + static_cast<ptrdiff_t>(kept_callers));
  if (with_chain) b.chains.insert(b.chains.end(), chain.begin(), chain.end());
  if (with_branches || !b.branches.empty()) b.branches.resize(chain_at);
  if (with_branches) b.branches.insert(b.branches.end(), chain_branches.begin(), chain_branches.end());
  const bool with_texts = with_chain && chain_texts.size() == chain.size();
  if (with_texts || !b.texts.empty()) b.texts.resize(chain_at);
  if (with_texts) b.texts.insert(b.texts.end(), chain_texts.begin(), chain_texts.end());
  const bool dsoless = !self.loc.dso || (children && std::any_of(callers.begin(), callers.end(),
                                                                   [](const BatchCaller& c) { return !c.loc.dso; }));
  b.combos.push_back({slot.leader, slot.member, with_chain, with_branches, self, callers_at, static_cast<uint32_t>(kept_callers),
                    chain_at, with_chain ? static_cast<uint32_t>(chain.size()) : 0u, dsoless,
                    summary ? std::move(verdict) : UnwindStatsCollector::StackVerdict{}, period, 1,
                    static_cast<uint32_t>(b.combos.size())});
}

void ReportBuilder::Impl::run(const std::function<void(uint64_t)>& on_progress) {
  ReplayHandlers handlers;
  handlers.on_other = [&](const perfdata::Record& rec, uint64_t) {
    // A BPF program's symbol may land in the kernel image's table without a map change.
    if (rec.type == perfdata::kRecordKsymbol) drain_combos();
    if (rec.type == perfdata::kRecordRead && opt.on_read) opt.on_read(rec);
  };
  handlers.on_sample = [&](const perfdata::Record& rec, uint64_t) {
    const perfdata::EventAttr* ea = reader.attr_of(rec);
    if (!ea || !SampleReadSplitter::applies(ea->attr)) return on_one_sample(rec, nullptr);
    reader.decode_sample(rec, sample);
    const std::vector<ReadDelivery> deliveries = read_splitter.split(sample);
    for (const auto& d : deliveries) on_one_sample(rec, &d);
  };
  // A repeated sample (the same bytes as the one before it but for the time) goes where that one
  // went, unless its time decides more than its comm: --time, off-CPU intervals.
  if (!opt.off_cpu && opt.time_ranges.empty()) {
    handlers.on_repeat = [&](const perfdata::Record& rec, uint64_t time) { on_repeat(rec, time); };
  }
  handlers.on_progress = on_progress;
  handlers.jobs = opt.jobs;
  // The machine is make_report_machine()'s (cmd_report).
  handlers.unwinder = &unwinder;
  handlers.replica = [this] { return make_report_machine(reader); };
  ReplayResult replayed = replay(reader, machine, symbolizer, &preloader, handlers);
  problems.insert(problems.end(), replayed.problems.begin(), replayed.problems.end());
  deferred = replayed.deferred;
  lost_samples = replayed.lost_samples;
  unwind.add_lost(replayed.lost_records, replayed.lost_events, replayed.lost_samples);
  drain_combos();
  adder.stop();
}

ReportBuilder::ReportBuilder(perfdata::Reader& reader, session::Machine& machine, symbols::Symbolizer& symbolizer,
                             symbols::DwarfUnwinder& unwinder, SymbolPreloader& preloader, ReportBuildOptions options)
    : impl_(std::make_unique<Impl>(reader, machine, symbolizer, unwinder, preloader, std::move(options))) {
  impl_->setup_events();
  if (!reader.attrs().empty()) impl_->decide_children();
}

ReportBuilder::~ReportBuilder() = default;

void ReportBuilder::run(const std::function<void(uint64_t)>& on_progress) { impl_->run(on_progress); }
void ReportBuilder::setup_events() { impl_->setup_events(); }
const std::vector<ReportBuilder::EventHist>& ReportBuilder::events() const { return impl_->events; }
const std::vector<ReportBuilder::GroupSlot>& ReportBuilder::group_slots() const { return impl_->group_slots; }
const std::vector<unsigned>& ReportBuilder::group_size() const { return impl_->group_size; }
bool ReportBuilder::decided() const { return impl_->decided; }
bool ReportBuilder::children() const { return impl_->children; }
bool ReportBuilder::any_callchain() const { return impl_->any_callchain; }
uint64_t ReportBuilder::lost_samples() const { return impl_->lost_samples; }
const std::vector<std::string>& ReportBuilder::problems() const { return impl_->problems; }

UnwindStats ReportBuilder::unwind_stats() {
  UnwindStats stats = impl_->unwind.finish();
  stats.deferred = impl_->deferred;
  return stats;
}

namespace {

// perf resolves a branch address in the thread's maps, then the kernel's (the sample's cpumode
// says nothing of where a branch went); an address neither has gets level 'H'.
// `map`: where the map found is said (nullptr for none).
BranchSide resolve_branch_end(symbols::Resolver& resolver, const session::Thread& thread, uint64_t addr,
                              const session::Map** map_out) {
  BranchSide side;
  side.addr = addr;
  *map_out = nullptr;
  for (uint8_t mode : {static_cast<uint8_t>(perfdata::kMiscUser), static_cast<uint8_t>(perfdata::kMiscKernel)}) {
    const symbols::ResolvedFrame at = resolver.resolve(&thread, mode, addr);
    if (at.map) {
      side.loc = locate(at, mode, addr, false);
      *map_out = at.map;
      return side;
    }
  }
  side.loc.level = 'H';
  side.loc.addr = addr;
  return side;
}

// PERF_MEM_DATA_SRC_NONE, perf's data_src of a sample without one: op, lvl, snoop, lock and dtlb NA.
constexpr uint64_t kDataSrcNone = 1 | 1ULL << 5 | 1ULL << 19 | 1ULL << 24 | 1ULL << 26;

}  // namespace

BranchHists build_branch_hists(perfdata::Reader& reader, session::Machine& machine, symbols::Symbolizer& symbolizer,
                               SymbolPreloader& preloader, const std::vector<BranchSortKey>& keys, unsigned jobs) {
  BranchHists out;
  perfdata::Sample sample;
  const bool want_srcline = std::any_of(keys.begin(), keys.end(), [](const BranchSortKey& k) {
    return k.branch && (k.key == BranchKey::kSrclineFrom || k.key == BranchKey::kSrclineTo);
  });
  symbols::Resolver resolver(machine, &symbolizer);
  ReplayHandlers handlers;
  handlers.jobs = jobs;
  handlers.on_sample = [&](const perfdata::Record& rec, uint64_t) {
    const int ai = reader.attr_index_of(rec);
    if (ai < 0) return;
    reader.decode_sample(rec, sample);
    if (sample.branches.empty()) return;
    while (out.hists.size() <= static_cast<size_t>(ai)) out.hists.push_back(std::make_unique<BranchHist>(keys));
    BranchHist& hist = *out.hists[static_cast<size_t>(ai)];
    session::Thread& thread = machine.findnew_thread(static_cast<int32_t>(sample.pid), static_cast<int32_t>(sample.tid));
    const uint8_t cpumode = rec.misc & perfdata::kMiscCpumodeMask;
    // The sample's own keys (comm, thread, cpu, its level), as the plain report has them.
    BranchHistEntry entry;
    entry.plain = sample_entry(machine, thread, sample, cpumode, resolver.resolve(&thread, cpumode, sample.ip));
    for (const perfdata::BranchEntry& b : sample.branches) {
      const session::Map* from_map = nullptr;
      const session::Map* to_map = nullptr;
      entry.from = resolve_branch_end(resolver, thread, b.from, &from_map);
      entry.to = resolve_branch_end(resolver, thread, b.to, &to_map);
      if (want_srcline) {
        entry.from.srcline = out.srclines.get(symbolizer, from_map, thread.pid(), b.from, false);
        entry.to.srcline = out.srclines.get(symbolizer, to_map, thread.pid(), b.to, false);
      }
      entry.flags.bits = b.flags;
      // The plain dso/sym keys see the branch's target, by its raw address, at the sample's level.
      entry.plain.loc.dso = entry.to.loc.dso;
      entry.plain.loc.sym = entry.to.loc.sym;
      entry.plain.loc.sym_start = entry.to.loc.sym_start;
      entry.plain.loc.addr = b.to;
      entry.plain.first_addr = b.to;
      entry.plain.unresolved = !entry.to.loc.sym;
      // perf counts each branch by the entry it went into (that entry's first branch).
      const BranchHistEntry& counted = hist.add(entry);
      out.type_stats.count(counted.flags.bits, counted.from.addr, counted.to.addr);
    }
  };
  out.replayed = replay(reader, machine, symbolizer, &preloader, handlers);
  return out;
}

MemHists build_mem_hists(perfdata::Reader& reader, session::Machine& machine, symbols::Symbolizer& symbolizer,
                         SymbolPreloader& preloader, const std::vector<MemKey>& keys, bool plain, unsigned jobs) {
  MemHists out;
  perfdata::Sample sample;
  symbols::Resolver resolver(machine, &symbolizer);
  ReplayHandlers handlers;
  handlers.jobs = jobs;
  handlers.on_sample = [&](const perfdata::Record& rec, uint64_t) {
    const int ai = reader.attr_index_of(rec);
    if (ai < 0) return;
    while (out.hists.size() < reader.attrs().size()) out.hists.emplace_back(keys);
    reader.decode_sample(rec, sample);
    session::Thread& thread = machine.findnew_thread(static_cast<int32_t>(sample.pid), static_cast<int32_t>(sample.tid));
    const uint8_t cpumode = rec.misc & perfdata::kMiscCpumodeMask;
    MemEntry e;
    e.self = sample_entry(machine, thread, sample, cpumode, resolver.resolve(&thread, cpumode, sample.ip));
    e.daddr = sample.addr;
    e.data = locate(resolver.resolve(&thread, cpumode, sample.addr), cpumode, sample.addr, false);
    e.data_src = sample.has(perfdata::kSampleDataSrc) ? sample.data_src : kDataSrcNone;
    // WEIGHT_STRUCT: weight (low 32 bits), instruction latency, pipeline stage cycles.
    if (sample.has(perfdata::kSampleWeightStruct)) {
      e.weight = sample.weight & 0xffffffffULL;
      e.ins_lat = (sample.weight >> 32) & 0xffff;
      e.p_stage_cyc = (sample.weight >> 48) & 0xffff;
    } else {
      e.weight = sample.weight;
    }
    const perfdata::PerfEventAttr& attr = reader.attrs()[static_cast<size_t>(ai)].attr;
    if (plain) {
      e.period = sample.has(perfdata::kSamplePeriod) ? sample.period : attr.sample_period;
    } else {
      e.period = e.weight ? e.weight : 1;  // perf's mem mode: a sample costs its weight
    }
    out.hists[static_cast<size_t>(ai)].add(e);
  };
  out.replayed = replay(reader, machine, symbolizer, &preloader, handlers);
  return out;
}

}  // namespace tperf::analysis
