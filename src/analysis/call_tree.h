// The callchain tree of one hist entry (perf's callchain_node tree): the sample chains merged
// by common prefix, each node holding a run of frames, the period that ended there (hit) and the
// period of everything below it (children_hit).
//
// Frames are interned: a CallFrameTable gives each distinct frame (a function, or an address
// without one) a 32-bit id once per report, and nodes hold runs of ids. Merging a chain into a
// tree then compares integers; with --children every sample merges a chain per caller, so this
// comparison is the report's inner loop.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <memory_resource>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "analysis/branch_types.h"
#include "util/mapped_allocator.h"

namespace tperf::session {
struct Dso;
}
namespace tperf::symbols {
struct Symbol;
}

namespace tperf::analysis {

struct CallFrame {
  uint64_t ip = 0;                     // the raw address
  const session::Dso* dso = nullptr;
  const symbols::Symbol* sym = nullptr;  // nullptr: unresolved
  uint64_t sym_start = 0;
  // perf matches frames by function when both have a symbol (an inlined one by its name alone),
  // else by address.
  bool same_as(const CallFrame& o) const;
};

// What a frame of a --branch-history chain says of its branch (perf's callchain_cursor_node
// branch fields): the target ("to") of a branch, or where one was taken ("from").
struct ChainBranch {
  bool branch = false;    // false: a frame of the sample's own callchain
  bool is_to = false;     // the branch's target (perf: a node with branch_from set)
  uint64_t from = 0, to = 0;  // the branch's addresses (its type statistics)
  uint64_t flags = 0;     // perf's branch_flags word (perfdata::BranchEntry::flags)
  uint32_t nr_loop_iter = 0;  // loops removed after this "from" (perf's remove_loops)
  uint64_t iter_cycles = 0;
};

// The branch counts of one frame of a tree node, summed over the chains that went through it
// (perf's callchain_list counters): printed after the frame as "(cycles:N)", "(CALL
// predicted:50.0%)", or " (calltrace)" for a frame that was no branch.
struct BranchCounts {
  uint64_t branch_count = 0, predicted_count = 0, abort_count = 0, cycles_count = 0;
  uint64_t iter_count = 0, iter_cycles = 0, from_count = 0;
  bool branch_to = false;
  BranchTypeStats types;  // of the branches into this frame
  // One more chain through this frame; `first`: the chain that made the node (perf's fill_node,
  // which does not count a "from" among from_count as its later matches do).
  void add(const ChainBranch& b, bool first);
  // The text perf appends to the frame's name ("" when there is nothing to say).
  std::string text() const;
};

// What tells the frames of a chain apart: perf's -g sort key.
enum class FrameKey : uint8_t {
  kFunction,  // the function (its start in its DSO; an inlined one by name), else the address
  kAddress,   // the DSO and the address alone (also what --branch-history sets)
  kSrcline,   // the srcline text where the frame has one (a map), else as kFunction
};

// Ids for frames: frames alike by the table's key get one id and are shown as the first of them.
class CallFrameTable {
 public:
  explicit CallFrameTable(FrameKey key = FrameKey::kFunction) : key_(key) {}
  FrameKey key() const { return key_; }
  bool by_address() const { return key_ == FrameKey::kAddress; }
  // `srcline`: in a table by address or srcline, the frame's srcline, shown after its symbol's
  // name (kept beside the frames rather than in them: most tables have none); by srcline it is
  // the key of the frames that have one.
  uint32_t intern(const CallFrame& f, const std::string* srcline = nullptr);
  const std::string* srcline(uint32_t id) const { return id < srclines_.size() ? srclines_[id] : nullptr; }
  // Whether frames of different ids can be alike for the tree (by srcline: an id stands for what a
  // node shows, its function and text, and the tree matches frames by text); then match_class()
  // is the id that stands for every frame alike to `id`.
  bool has_classes() const { return key_ == FrameKey::kSrcline; }
  uint32_t match_class(uint32_t id) const { return id < match_.size() ? match_[id] : id; }
  const CallFrame& operator[](uint32_t id) const { return frames_[id]; }
  size_t size() const { return frames_.size(); }

 private:
  // 8 bytes: the key is read from the frame itself when the tags match (a slot that held the
  // key, 24 bytes, made the table most of the memory of a report of stacks that rarely repeat).
  struct Slot {
    uint32_t id = 0;   // id + 1; 0 = empty
    uint32_t tag = 0;  // the low 32 bits of the key's hash
  };
  void grow();
  FrameKey key_ = FrameKey::kFunction;
  util::GrowArray<CallFrame> frames_;
  std::vector<const std::string*> srclines_;  // by id, once a frame has one
  std::vector<uint32_t> match_;               // by id, in a table by srcline: its class
  std::unordered_map<std::string_view, uint32_t> classes_;  // a srcline text -> its class (views of the texts)
  util::MappedVector<Slot> slots_;  // open addressing, linear probing, power-of-two size
};

// A node's frame ids: 16 bytes where a std::pmr::vector takes 32 (each vector keeps its own
// resource pointer; every node of a tree shares one). Up to kInline ids are kept in the object
// itself, longer runs in an array of the tree's memory resource. Most nodes of a report hold
// short runs (every split leaves one), and the ids sit in the node that is being looked at
// anyway: merging a chain reads them at each node it passes, and an array of their own was one
// more cache miss there. The tree hands it the resource; nothing frees an array but release()
// or the resource.
class IdArray {
 public:
  static constexpr size_t kInline = 3;
  size_t size() const { return words_[0]; }
  bool empty() const { return words_[0] == 0; }
  const uint32_t* data() const { return size() <= kInline ? words_ + 1 : heap(); }
  const uint32_t* begin() const { return data(); }
  const uint32_t* end() const { return data() + size(); }
  uint32_t operator[](size_t i) const { return data()[i]; }
  operator std::span<const uint32_t>() const { return {data(), size()}; }

  // Replaces the contents by `v`, in the object or in an array of exactly its size.
  void assign(std::span<const uint32_t> v, std::pmr::memory_resource* r) {
    release(r);
    if (v.size() > kInline) {
      auto* a = static_cast<uint32_t*>(r->allocate(v.size() * sizeof(uint32_t), alignof(uint32_t)));
      std::copy(v.begin(), v.end(), a);
      set_heap(a);
    } else {
      std::copy(v.begin(), v.end(), words_ + 1);
    }
    words_[0] = static_cast<uint32_t>(v.size());
  }
  // Keeps the first `n` ids (the resource takes an array no longer needed back).
  void keep_first(size_t n, std::pmr::memory_resource* r) {
    IdArray head;
    head.assign(std::span<const uint32_t>(*this).first(n), r);
    release(r);
    *this = head;
  }
  void release(std::pmr::memory_resource* r) {
    if (size() > kInline) r->deallocate(heap(), size() * sizeof(uint32_t), alignof(uint32_t));
    words_[0] = 0;
  }

 private:
  // words_[0]: the size; words_[1..3]: the ids when they fit, else words_[2..3] the array's
  // address (8-aligned, as the object is).
  uint32_t* heap() const {
    uint32_t* p;
    std::memcpy(&p, words_ + 2, sizeof p);
    return p;
  }
  void set_heap(uint32_t* p) { std::memcpy(words_ + 2, &p, sizeof p); }
  alignas(8) uint32_t words_[4] = {0, 0, 0, 0};
};
static_assert(sizeof(IdArray) == 16);

// A node's run of frames: ids of the tree's frame table (CallTree::table()). The table is not
// kept in each node: with it a node took 56 bytes, which the tree's pool hands out as 64; without
// it 48, and a report of stacks that rarely repeat is mostly nodes.
class FrameRun {
 public:
  size_t size() const { return ids.size(); }
  bool empty() const { return ids.empty(); }
  IdArray ids;
};

struct CallNode;

// A node's children: in creation order (perf's insertion order, which its output replays), and
// found by the id of their first frame. A lone child (most nodes of a report have at most one)
// is held in the list itself and found by its own first id; more share one array of the tree's
// resource with their first ids and, once a node has many children (deep recursive profiles
// give nodes thousands), the ids sorted with where each child is: 16 bytes a child, 16 a node.
class ChildList {
 public:
  // Children up to which a linear search of the ids is as fast as a sorted one.
  static constexpr uint32_t kSortedFrom = 8;
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  CallNode* const* begin() const { return nodes(); }
  CallNode* const* end() const { return nodes() + size_; }
  CallNode* operator[](size_t i) const { return nodes()[i]; }
  CallNode* find(uint32_t first_id) const;
  // `first_id`: the first id of `child`'s run (which no split changes).
  void push_back(uint32_t first_id, CallNode* child, std::pmr::memory_resource* r);
  void release(std::pmr::memory_resource* r);
  void swap(ChildList& o) {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(cap_, o.cap_);
  }

 private:
  // cap_ == 0: at most one child, data_.one. Else data_.block: CallNode* nodes[cap]; uint32_t
  // ids[cap] (the children's first ids, parallel to the nodes; sorted from kSortedFrom children
  // on); uint32_t at[cap] (for a sorted id, its child).
  CallNode** nodes() const { return cap_ ? static_cast<CallNode**>(data_.block) : const_cast<CallNode**>(&data_.one); }
  uint32_t* ids() const { return reinterpret_cast<uint32_t*>(nodes() + cap_); }
  uint32_t* at() const { return ids() + cap_; }
  static size_t bytes(uint32_t cap) { return cap * (sizeof(CallNode*) + 2 * sizeof(uint32_t)); }
  union Data {
    void* block;
    CallNode* one;
  } data_{nullptr};
  uint32_t size_ = 0, cap_ = 0;
};

// Nodes and everything they hold live in the tree's memory resource: a report builds millions
// of small nodes, and a pool hands them out and takes them back wholesale far cheaper than malloc.
// A report of stacks that rarely repeat is mostly nodes: one fits a cache line (asserted).
struct CallNode {
  CallNode() = default;
  CallNode(const CallNode&) = delete;
  CallNode& operator=(const CallNode&) = delete;

  FrameRun frames;            // the run of frames this node stands for
  uint64_t hit = 0;           // period of chains that end here
  uint64_t children_hit = 0;  // period of chains that go on below
  ChildList children;         // owned by the tree
  uint64_t cumul() const { return hit + children_hit; }
};
static_assert(sizeof(CallNode) == 48, "the pool's 48-byte class: a node is one of millions");

class CallTree {
 public:
  // `frames` interns the ids appended; it must outlive the tree. `arena`: where the nodes and
  // their arrays live; it must outlive the tree, which leaves them to it (releasing the arena
  // frees them all at once).
  CallTree(const CallFrameTable* frames, std::pmr::memory_resource* arena);
  CallTree(const CallTree&) = delete;
  CallTree& operator=(const CallTree&) = delete;

  // Adds one chain of frame ids (in display order: root first for caller graphs) with its period.
  // `branches` (empty, or parallel to `chain`): what each frame says of its branch; the nodes
  // the chain goes through then count them (BranchCounts).
  // `count`: the samples the chain stands for (kept only once count_samples() was called).
  void append(std::span<const uint32_t> chain, uint64_t period, std::span<const ChainBranch> branches = {},
              uint64_t count = 1);
  // Adds every chain of `src` (same frame table) as perf's callchain_merge does: each node's
  // path with the period that ended there, parents before children, children in perf's order.
  void merge(const CallTree& src);

  const CallNode& root() const { return root_; }
  // The table the nodes' frame ids are of.
  const CallFrameTable* table() const { return table_; }
  // --branch-history: the branch counts of each frame of a node's run (parallel to its ids);
  // nullptr for a node no chain with branches went through. Kept beside the nodes, which most
  // trees have millions of and none of these.
  const std::vector<BranchCounts>* counts(const CallNode& node) const;
  // -g ...,count: the samples of the chains that end at each node (perf's count) and of those
  // that go on below it (children_count), kept beside the nodes from now on (before any append).
  void count_samples();
  bool counts_samples() const { return sample_counts_ != nullptr; }
  uint64_t count(const CallNode& node) const;
  uint64_t children_count(const CallNode& node) const;
  uint64_t cumul_count(const CallNode& node) const { return count(node) + children_count(node); }
  // The longest chain appended.
  size_t max_depth() const { return max_depth_; }
  bool empty() const { return root_.children.empty(); }

 private:
  CallNode* make_node(std::span<const uint32_t> ids);
  void add_child(CallNode& node, CallNode* child);
  // The child of `node` whose run begins with a frame alike to `id`.
  CallNode* find_child(const CallNode& node, uint32_t id) const;

  std::pmr::memory_resource* resource_;
  const CallFrameTable* table_;
  std::unique_ptr<std::unordered_map<const CallNode*, std::vector<BranchCounts>>> counts_;
  struct SampleCounts {
    uint64_t count = 0, children_count = 0;
  };
  std::unique_ptr<std::unordered_map<const CallNode*, SampleCounts>> sample_counts_;
  CallNode root_;
  size_t max_depth_ = 0;
};

// perf's order of a node's children in its tree (rb_root_in); see call_tree.cc.
std::vector<const CallNode*> children_in_perf_order(const CallNode& node, const CallFrameTable& table);

}  // namespace tperf::analysis
