// Histogram of samples by sort keys (perf report's hist entries): each distinct combination of
// the chosen keys (comm, pid, dso, sym, cpu, ...) gets one entry holding its self period and
// sample count and, with callchains, the period accumulated through the callchains ("children").
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "analysis/call_tree.h"
#include "analysis/perf_rbtree.h"

namespace tperf::session {
struct Dso;
}
namespace tperf::symbols {
struct Symbol;
}

namespace tperf::analysis {

// kIpcNull: the IPC column perf 6.1 report adds to a --sort text that says "symbol" (empty without
// branch stacks); it compares as the symbol does in perf's input trees, by address, in the
// output sort too, and is never given by name.
enum class SortKey : uint8_t { kComm, kPid, kTid, kDso, kSym, kSymoff, kCpu, kSrcline, kParent, kTrace, kIpcNull };

// Parses perf's --sort syntax ("comm,dso,sym"; "symbol" and "thread" spellings too). Returns ""
// or a message naming the unknown key.
std::string parse_sort_keys(std::string_view spec, std::vector<SortKey>* out);
// The column header perf prints for a key ("Command", "Pid:Command", "Shared Object", ...).
const char* sort_key_header(SortKey key);

// One field of `perf report -F`: a value column or a sort key. The order of a -F list is the
// column order and, after the --sort keys, the output order.
struct ReportField {
  // kOverheadSys...kOverheadGuestUs: perf's overhead_sys, overhead_us, overhead_guest_sys and
  // overhead_guest_us (--show-cpu-utilization): the self period of samples taken in that mode.
  enum class Kind : uint8_t {
    kOverhead,
    kOverheadChildren,
    kSamples,
    kPeriod,
    kKey,
    kOverheadSys,
    kOverheadUs,
    kOverheadGuestSys,
    kOverheadGuestUs,
  };
  bool cpu_mode() const { return kind >= Kind::kOverheadSys; }
  Kind kind = Kind::kKey;
  SortKey key = SortKey::kComm;  // kKey only
  bool operator==(const ReportField&) const = default;
};
// Parses a -F list ("overhead,sample,comm,sym"). Returns "" or perf's message for an unknown
// field ("Unknown --fields key: `x'").
std::string parse_report_fields(std::string_view spec, std::vector<ReportField>* out);

// Where an address is: what the dso and sym keys need.
struct Location {
  const session::Dso* dso = nullptr;  // nullptr: no map covers the address
  const symbols::Symbol* sym = nullptr;  // nullptr: no symbol (perf then prints the address)
  uint64_t sym_start = 0;             // in the same space as addr
  uint64_t addr = 0;                  // the address as perf keys it: map-relative for user files
  char level = '.';                   // '.' user, 'k' kernel, 'H' hypervisor, 'g'/'u' guest
};

struct HistEntry {
  // Keys (fields of keys not in use are left at their defaults).
  const std::string* comm = nullptr;  // the comm at the sample's time
  int32_t pid = -1;
  int32_t tid = -1;
  int32_t cpu = -1;
  // (The flags sit here, in what would be padding: 136 bytes an entry where they made 152.)
  // The address of the sample that made the entry had no symbol (perf widens the dso column for
  // such entries, whichever keys are in use). Not a key.
  bool unresolved = false;
  // The srcline came with the entry (a chain frame's, in chains keyed by address): perf knew it
  // from the start rather than working it out on a comparison (see Hist::srcline_known). Not a key.
  bool srcline_eager = false;
  // Left out by a filter (--comm, --dso, --pid, --tid, -S): hidden from the output but counted
  // in the totals. Like perf, an entry keeps the state of the sample that created it: a later
  // sample that passes the filters adds to a hidden entry and the other way round.
  bool filtered = false;
  // The cpumode of the sample this entry is added for (perf's al->cpumode): which of the
  // --show-cpu-utilization values its period goes to. Not a key.
  uint8_t cpumode = 0;
  Location loc;
  const std::string* srcline = nullptr;  // the srcline key's text (perf's get_srcline), interned
  // The address of the sample that made the entry, in loc.addr's terms (perf's he->ip: where a
  // data-object symbol shows its offset). Not a key.
  uint64_t first_addr = 0;
  const std::string* trace = nullptr;    // the trace key: the sample's trace text (perf script's
                                         // trace field), interned; nullptr for perf's "N/A"
  std::string_view parent;               // the parent key: the first callchain symbol matching
                                         // the parent pattern, "" for perf's "[other]"
  // Values.
  uint64_t period = 0;    // self
  uint64_t samples = 0;
  uint64_t children_period = 0;  // self plus what callees of this entry's samples cost
  uint64_t children_samples = 0;
};
static_assert(sizeof(HistEntry) <= 136, "HistEntry's flags are meant to fill the padding after cpu");

// What the keys of the entries seen so far say of perf's comparison of entries (Hist's
// compare_keys()): whether it is still an order on them. perf walks its tree of entries with that
// comparison; while it is an order, a walk finds the entry of equal keys (and a hash finds the
// same one), and samples alike may be added together. Flags only ever go on.
class OrderRisk {
 public:
  explicit OrderRisk(const std::vector<SortKey>& keys = {});
  // Notes one entry's keys; true when that made the comparison no order at all (walk_always()).
  bool note(const HistEntry& e) { return note(e.loc); }
  bool note(const Location& loc);
  // Entries of any kind may be missed by the walk; or only those without a DSO (garbage
  // addresses of broken walks, when the dso key comes first).
  bool walk_always() const { return walk_always_; }
  bool walk_dsoless() const { return walk_dsoless_; }
  bool total() const { return !walk_always_ && !walk_dsoless_; }
  bool total_with_dsos() const { return !walk_always_; }

 private:
  bool keyed_by_sym_ = false;  // the sym or symoff key (else nothing here applies)
  bool use_dso_ = false;
  bool dso_before_sym_ = false;  // the dso key comes before sym/symoff
  bool walk_always_ = false;
  bool walk_dsoless_ = false;
  bool seen_named_ = false, seen_unresolved_ = false, seen_inlined_ = false;
  uint64_t min_unresolved_ = ~uint64_t{0}, max_unresolved_ = 0;  // of the addresses that may meet
};

class Hist {
 public:
  // `members`: the events of an event group whose samples this hist holds side by side (perf
  // report --group): member 0 (the leader) fills the entries' own fields, the others columns of
  // their own (member_*()).
  explicit Hist(std::vector<SortKey> keys, unsigned members = 1);
  ~Hist();
  Hist(Hist&&) noexcept;
  Hist& operator=(Hist&&) noexcept;

  const std::vector<SortKey>& keys() const { return keys_; }

  // One sample: `self` holds its keys. With `cumulate` (children mode), the sample's period is
  // also credited, once per distinct entry, to `self` and to the entry of every frame in
  // `callers` (its callchain, leaf first) as children_period. `count` > 1: that many samples
  // alike in everything (keys and chain), `period` their sum; the result is what adding them
  // one by one gives.
  void add(const HistEntry& self, uint64_t period, bool cumulate = false, std::span<const HistEntry> callers = {},
           unsigned member = 0, uint64_t count = 1);

  // A sample equal in every key and chain frame to an earlier one whose add() or
  // add_with_chain() was just followed by remember_add(&memo): while no entry has been made since
  // (perf's walks then end where they ended), it is credited to the same entries and its period
  // joins that sample's chains in the trees still being built, without a lookup. Returns false
  // when that cannot be (the sample must then be added anew): another entry made since, a group
  // member, srcline or trace keys (whose texts perf makes while comparing), or the earlier chains
  // already handed to the tree builder.
  struct AddMemo {
    bool valid = false;
    bool with_chain = false;
    bool chain_mergeable = false;
    uint32_t gen = 0;
    uint32_t self = 0;
    std::vector<uint32_t> callers;
    std::vector<uint8_t> first;
    uint64_t jobs_serial = 0;
    size_t jobs_begin = 0, jobs_end = 0;
    uint8_t cpumode = 0;
  };
  void remember_add(AddMemo* memo) const;
  bool add_again(const AddMemo& memo, uint64_t period, bool cumulate, unsigned member, uint64_t count);

  // Like add(), and builds the entries' callchain trees from `frames` (parallel to `callers`, in
  // display order). Without `cumulate` the sample's entry gets the whole chain; with it, so does
  // the sample's entry, and every other distinct entry on the chain gets the part of the chain
  // from its own frame on (in caller order: the frame and its callees).
  // `branches` (empty, or parallel to `frames`): --branch-history's branch frames, counted in
  // the trees' nodes.
  void add_with_chain(const HistEntry& self, uint64_t period, bool cumulate, std::span<const HistEntry> callers,
                      std::span<const CallFrame> frames, unsigned member = 0, uint64_t count = 1,
                      std::span<const ChainBranch> branches = {}, std::span<const std::string* const> srclines = {});
  // What tells chains' frames apart (perf's -g sort key: by DSO and address for -g ...,address,
  // which --branch-history sets, by srcline for -g ...,srcline); before the first chain.
  void use_frame_key(FrameKey key);
  // Whether the callchain trees are built on a thread of their own (by default when the machine
  // has more than one core; `-j 1` asks for none); before the first chain.
  void use_tree_thread(bool on) { tree_thread_ = on; }
  // -g ...,count: the trees keep the number of samples of each node (CallTree::count_samples);
  // before the first chain.
  void count_chain_samples() { count_samples_ = true; }
  // --show-cpu-utilization (and -F overhead_sys...): each entry's self period split by the
  // cpumode of its samples (perf's period_sys, period_us, period_guest_sys, period_guest_us),
  // kept from the next add on; each member of a group its own.
  void count_cpu_modes() { count_cpu_modes_ = true; }
  // The part of `e`'s self period (of the group's member `member`) the cpumode field `kind`
  // names (0 unless counted).
  uint64_t cpu_mode_period(const HistEntry& e, ReportField::Kind kind, unsigned member = 0) const;
  // perf collapses its entries into a second tree (and walks them in that tree's order) when a
  // key that has a collapse comparison of its own, comm, came in through --sort or the default
  // sort order; the keys -F adds to the sort keys do not make it collapse. On by default whenever
  // comm is a key; off for a comm key that only -F gave.
  void collapse_by_comm(bool on) { collapse_comm_ = on && use_comm_; }

  // Whether compare_keys() is an order on the entries made so far (see OrderRisk). A builder
  // that holds samples back before adding them keeps an OrderRisk of its own (order_risk()
  // makes one for these keys) and notes their entries as it goes.
  bool order_is_total() const { return risk_.total(); }
  OrderRisk order_risk() const { return OrderRisk(keys_); }

  // An entry's values for one member of the group (member 0: the entry's own fields).
  unsigned members() const { return members_; }
  uint64_t member_period(const HistEntry& e, unsigned member) const;
  uint64_t member_samples(const HistEntry& e, unsigned member) const;
  uint64_t member_children_period(const HistEntry& e, unsigned member) const;

  // The callchain tree of an entry of this hist, nullptr when it has none. The trees are built
  // on a second thread while samples come in; the first call waits for it to catch up.
  const CallTree* tree_of(const HistEntry* e) const;
  // Trees hold period; one below `floor` draws nothing in an absolute graph (every node drawn
  // weighs the threshold or more). Before the first tree_of() or settle(): the entries whose tree
  // would hold less than `floor` get none (tree_of() gives nullptr), and theirs are never made.
  void want_trees_from(uint64_t floor) const;
  // The longest chain added to an entry's own tree (CallTree::max_depth: a tree merged into it
  // does not count), whether or not its tree is made.
  size_t tree_depth(const HistEntry* e) const;
  // Everything the readers above work out on first use (the trees, the collapse, the srclines and
  // trace texts perf knows) worked out now: afterwards reading this Hist (tree_of, sorted and the
  // rest, all const) changes nothing, so threads may format its entries side by side.
  void settle() const;

  // Entries in perf's output order: by (children_period when `by_children`, else period)
  // descending; with `by_children` and callchain trees, an entry of the same thread with the
  // deeper tree (the caller) first; then by self period, each sort key ascending, the address.
  // `elided`: keys whose column perf leaves out (a one-item --comm/--dso/-S filter); perf's
  // output sort skips them, which changes where the hidden entries of other values go in its
  // tree and so the order of ties among the shown ones.
  // `callee_order`: the graphs are callee-first (-g callee); perf 6.1 then puts the shallower
  // tree of equal children first (__hpp__sort_acc negates its depth difference only for caller).
  // `by_samples_last` (-n): entries whose keys compare equal go by their samples, more first, as
  // perf's output sort then compares its Samples column.
  std::vector<const HistEntry*> sorted(bool by_children, bool with_trees = false,
                                       std::span<const SortKey> elided = {}, bool callee_order = false,
                                       bool by_samples_last = false) const;

  // Entries in the order of a -F report: compared field by field (value fields larger first),
  // replayed into a red-black tree like sorted().
  std::vector<const HistEntry*> sorted_by(const std::vector<ReportField>& order) const;

  // Entries in the order perf walks its input (or, with comm, collapsed) tree: by key.
  std::vector<const HistEntry*> in_key_order() const;

  // Key order (perf's input and collapsed trees): the sort keys, symbols and unresolved entries by
  // address. Entries of another Hist with the same keys compare as perf compares them (diff).
  int compare_keys(const HistEntry& a, const HistEntry& b) const;
  // The sort keys (perf's output comparator after the value columns); `by_address`: symbols by
  // address as perf's input trees key them, instead of by name.
  int compare_sort_keys(const HistEntry& a, const HistEntry& b, bool by_address = false) const;
  // One sort key of the above.
  int compare_key(SortKey key, const HistEntry& a, const HistEntry& b, bool by_address = false) const;

  // perf 6.1 works an entry's srcline out only when it compares the entry with another one whose
  // keys before srcline are equal (its input tree does so once two samples share those keys);
  // the column is as wide as the srclines known then, and a later one is cut to that width.
  bool srcline_known(const HistEntry& e) const;
  // The same for the trace key (perf 6.1 makes an entry's trace text as lazily).
  bool trace_known(const HistEntry& e) const;

  uint64_t total_period() const { return total_period_; }
  uint64_t total_samples() const { return total_samples_; }
  size_t size() const { return entries_.size(); }

 private:
  HistEntry normalized(const HistEntry& e) const;
  uint32_t findnew(const HistEntry& key, unsigned member);
  size_t hash_of(const HistEntry& e) const;
  bool same_keys(const HistEntry& a, const HistEntry& b) const;

  struct MemberValues {
    uint64_t period = 0, samples = 0, children_period = 0;
  };
  // The values of members 1.. of entry i at [i * (members_ - 1) + member - 1].
  MemberValues& member_values(uint32_t entry, unsigned member);
  const MemberValues* member_values(const HistEntry& e, unsigned member) const;
  // Compares the self periods of the group's members 1.., larger first (perf 6.1 compares the
  // accumulated column by the leader's value alone).
  int compare_members(const HistEntry& a, const HistEntry& b) const;

  std::vector<SortKey> keys_;
  unsigned members_ = 1;
  mutable std::vector<MemberValues> member_values_;
  // A group's members other than the leader keep entries of their own, in input trees of their
  // own, as perf's member hists do (member_input_[m - 1]); origin_[i] is the member entry i was
  // made for. Their columns join the leader's entries only when the order is first read
  // (collapse_once()): each leader entry takes the values of the member entry that member's tree
  // finds for it, and a member entry left over goes into the leader's tree with its own keys and
  // thread, no leader values (perf's hists__match() and hists__link()). An entry only members
  // have so goes in after all the leader's, which changes no place perf's non-total order gave.
  std::vector<PerfRbTree> member_input_;
  std::vector<uint8_t> origin_;
  bool use_comm_ = false, use_pid_ = false, use_tid_ = false, use_dso_ = false, use_sym_ = false,
       use_symoff_ = false, use_cpu_ = false, use_srcline_ = false, use_parent_ = false,
       use_trace_ = false;
  bool collapse_comm_ = false;  // see collapse_by_comm()
  // srcline_known(): by entry index, filled on first use.
  mutable std::vector<uint8_t> srcline_known_;
  mutable std::vector<uint8_t> trace_known_;
  // Children mode: perf compares each callchain entry of a sample with the entries the sample
  // already credited (its he_cache) before it looks the entry up, working out the lazy key of
  // those whose keys before it are equal. Per entry: bit 0 srcline, bit 1 trace, known so.
  std::vector<uint8_t> cumulative_known_;
  void note_cumulative_compares(uint32_t self, std::span<const HistEntry> callers);
  bool prefix_equal(SortKey key, const HistEntry& a, const HistEntry& b) const;
  bool lazily_known(const HistEntry& e, SortKey key, std::vector<uint8_t>& cache) const;

  // mutable: collapse_once() merges entries on the first read, as perf's collapse step does
  // before its output.
  mutable util::GrowArray<HistEntry> entries_;
  // Merging chains into the trees (with --children, one chain per caller entry of a sample)
  // is as much work as everything else together: it runs on its own thread, fed in batches
  // in sample order.
  class TreeBuilder;
  struct TreeJob {
    uint32_t entry;
    uint32_t begin, end;  // the chain: ids[begin, end) of the batch
    uint32_t count;       // the samples it stands for (in what was padding)
    uint64_t period;
  };
  struct TreeBatch {
    std::vector<uint32_t> ids;
    std::vector<TreeJob> jobs;
    std::vector<ChainBranch> branches;  // empty, or parallel to ids
    void clear() {  // keeps the arrays' capacity
      ids.clear();
      jobs.clear();
      branches.clear();
    }
  };
  void submit_trees() const;
  void finish_trees() const;  // hands the builder what is left and waits for it
  mutable std::unique_ptr<TreeBuilder> trees_;
  mutable bool floor_known_ = false;  // want_trees_from() was called
  bool tree_thread_ = std::thread::hardware_concurrency() > 1;
  bool count_samples_ = false;  // see count_chain_samples()
  // count_cpu_modes(): by entry and member (at entry * members_ + member), the self period of
  // kernel, user, guest kernel and guest user samples (made on the first add that counts).
  bool count_cpu_modes_ = false;
  uint8_t last_cpumode_ = 0;  // of the last add (its AddMemo keeps it)
  mutable std::vector<std::array<uint64_t, 4>> cpu_mode_periods_;
  void credit_cpu_mode(uint32_t entry, unsigned member, uint8_t cpumode, uint64_t period) const;
  // Adds member `member`'s periods by cpumode of entry `from` to entry `into`'s.
  void add_cpu_modes(uint32_t into, uint32_t from, unsigned member) const;
  mutable TreeBatch batch_;
  // The trees' frames (on the heap: trees point at it and a Hist may move). The builder's threads
  // read it until it is gone: ~Hist destroys trees_ first.
  std::unique_ptr<CallFrameTable> frames_ = std::make_unique<CallFrameTable>();
  std::vector<uint32_t> chain_ids_;  // the current sample's chain, interned
  // hash of the keys -> entry: open addressing, linear probing, power-of-two size; a slot holds
  // the entry's index + 1 (0 = empty) and the low half of its hash (all a table of up to 2^32
  // slots indexes by; 8 bytes a slot where the whole hash made 16).
  struct Slot {
    uint32_t hash = 0;
    uint32_t entry = 0;
  };
  util::MappedVector<Slot> index_;
  void grow_index();
  // When lookups walk input_ (below): the entry each walk found for a key equal to it, kept while
  // no entry has been inserted since (tree_gen_), for the tree's shape decides where a walk ends.
  // A key the memo does not hold (or lost to a later one) is walked again.
  struct MemoSlot {
    uint32_t hash = 0;  // the low half of the key's hash
    uint32_t entry = 0;
    uint32_t gen = 0;
  };
  static constexpr uint32_t kNoMemo = ~uint32_t{0};
  static constexpr size_t kMemoProbes = 4;
  util::MappedVector<MemoSlot> walk_memo_;
  uint32_t tree_gen_ = 1;
  // The walks stored for the tree's current shape (memo_gen_), which size the memo.
  uint32_t memo_gen_ = 0;
  size_t memo_live_ = 0;
  bool walk_memo_hit(const MemoSlot& s, size_t h, const HistEntry& key) const;
  uint32_t walk_memo_find(size_t h, const HistEntry& key) const;
  void walk_memo_store(size_t h, const HistEntry& key, uint32_t found);
  // perf's input tree of the entries, shape and all: where each new entry goes, and, once the
  // keys seen make compare_keys() no order, which entry a sample joins. perf walks that tree from
  // the root with its comparator and makes a second entry of equal keys where the walk misses the
  // first (two unresolved addresses farther apart than 2^63 compare by the sign of their wrapped
  // difference; with the sym key not after the dso key, an entry with a symbol and one without
  // compare by DSO, two without by address). While the comparator is an order the hash above
  // finds what the walk would.
  PerfRbTree input_;
  OrderRisk risk_;
  // Whether `e` is looked up by walking input_ rather than by the hash.
  bool walks(const HistEntry& e) const { return risk_.walk_always() || (risk_.walk_dsoless() && !e.loc.dso); }
  // False when the entries' keys differ for sure (a quick test before compare_keys()).
  bool may_be_equal(const HistEntry& a, const HistEntry& b) const;
  // perf's collapsed tree (with the comm key): the input tree's entries in its order, each merged
  // into an equal one that tree's walk finds (values, group columns and callchain trees). Done
  // once, on the first read of the order; merged-away entries leave key_order_.
  void collapse_once() const;
  mutable bool collapsed_ = false;
  // collapse_once()'s steps: a tree of the entries `order` lists, equal ones merged; one entry's
  // values (all members', and its callchain tree) added into another's; member `m`'s values.
  PerfRbTree collapse(const std::vector<uint32_t>& order) const;
  // Per entry (by index), a number for its value of one key whose comparison is an order of its
  // own: entries whose values compare equal get one number, and the numbers compare as the
  // values do (compare_key()'s sign). The collapse and the output sort compare entries millions
  // of times on a system-wide report, each comparison chasing names (comm, DSO, symbol) through
  // the entries; a key's numbers sit side by side instead. `by_name`: the symbol key as the
  // output sort compares it (by name, unresolved entries equal, after the named); the other
  // keys do not depend on it. Empty for a key that has no such numbers here (its entries are
  // then compared by compare_key()).
  const std::vector<uint32_t>& key_ranks(SortKey key, bool by_name) const;
  struct KeyRanks {
    SortKey key;
    bool by_name;
    size_t entries;  // how many entries there were (keys of entries never change)
    std::vector<uint32_t> ranks;
  };
  // Worked out so far (a deque: key_ranks() hands out references that later ones must not move);
  // the output sort drops them when done.
  mutable std::deque<KeyRanks> key_ranks_;
  std::vector<uint32_t> rank_values(SortKey key, bool by_name) const;
  void merge_into(uint32_t into, uint32_t from) const;
  void add_member_values(uint32_t into, uint32_t from, unsigned m) const;
  mutable std::vector<uint32_t> key_order_;
  // The last add(): its entry, the entry of each caller, and whether that caller was the first
  // frame of its entry on the chain (recursion credits an entry once). `credited_` stamps each
  // entry with the number of the last sample that credited it.
  uint32_t last_self_ = 0;
  // The last add(): whether it had a chain, and its jobs in batch_ (batch_serial_ counts batches).
  bool last_with_chain_ = false, last_chain_mergeable_ = false;
  size_t last_jobs_begin_ = 0, last_jobs_end_ = 0;
  mutable uint64_t batch_serial_ = 0;
  std::vector<uint32_t> caller_entries_;
  std::vector<uint8_t> caller_first_;
  std::vector<uint64_t> credited_;
  std::vector<uint32_t> he_cache_;  // the entries the current sample credited (!order_is_total())
  uint64_t total_period_ = 0;
  uint64_t total_samples_ = 0;
  uint64_t adds_ = 0;  // calls of add(): the stamps of credited_
};

// perf's short name of a DSO for the dso column, "[unknown]" without one.
std::string_view dso_column_name(const session::Dso* dso);

}  // namespace tperf::analysis
