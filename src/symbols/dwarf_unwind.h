// DWARF unwinding of the user stacks `perf record --call-graph dwarf` copies into samples
// (PERF_SAMPLE_REGS_USER + PERF_SAMPLE_STACK_USER), with elfutils libdwfl, giving the frames
// perf 6.1 (built with libdw) gives: the sampled pc, then each caller's return address - 1.
//
// One Dwfl per address space, kept between samples: the ELF files of the frames are reported
// to it as modules when a frame first lands in them (as perf does for each sample), so a
// module's CFI is parsed once per process instead of once per sample. A module that no longer
// matches the process's maps (munmap, exec, a new process in the same address space object)
// makes the Dwfl be rebuilt.
//
// Known difference: the perf 6.1 installed here is built with libunwind too, and then unwinds
// with libunwind, not libdw. Both give the same frames where the CFI and the stack copy suffice;
// where a stack copy ends mid-stack (system-wide recordings of deep stacks), perf's libunwind walk
// often adds a last "ffffffffffffffff [unknown]" frame (a return address read as 0, minus one)
// and stops one frame earlier than libdw does. Not emulated yet.
//
// Not thread-safe: use one DwarfUnwinder per thread.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "perfdata/attr.h"
#include "perfdata/sample.h"
#include "session/callchain.h"

struct Dwfl_Module;  // elfutils' libdwfl
#include "session/machine.h"

namespace tperf::symbols {

class ElfFile;

struct DwarfUnwindOptions {
  std::string symfs;        // perf --symfs: prefix of every path of the recording's machine
  std::string buildid_dir;  // perf's build-id cache; "" = $HOME/.debug
  size_t max_cached_spaces = 64;  // Dwfl objects kept (least recently used ones are dropped)
  // Step from frame to frame with each pc's unwind rules, looked up once and kept, instead of
  // libdwfl's walk (which looks the FDE up and runs its CFA program anew for every frame); the
  // frames are the same, and a frame whose rules it does not follow leaves the stack to libdwfl.
  bool cached_rules = true;
};

class DwarfUnwinder {
 public:
  explicit DwarfUnwinder(const session::Machine& machine, DwarfUnwindOptions options = {});
  ~DwarfUnwinder();
  DwarfUnwinder(const DwarfUnwinder&) = delete;
  DwarfUnwinder& operator=(const DwarfUnwinder&) = delete;

  // Whether perf would unwind this sample: its event samples user registers and stack, and
  // both were copied (a non-empty register set and a non-zero dyn_size).
  static bool wants(const perfdata::PerfEventAttr& attr, const perfdata::Sample& sample);
  // Whether the event's samples copy user registers and stack, which wants() asks first.
  static bool copies_stacks(const perfdata::PerfEventAttr& attr) {
    return attr.has(perfdata::kSampleRegsUser) && attr.has(perfdata::kSampleStackUser);
  }

  // Appends the sample's user frames to `out`, leaf first, at most `max_stack` of them, each
  // with cpumode user and the map it falls in. Frames perf cannot unwind are simply missing
  // (often all of them, or all but the sampled pc). Returns how many were appended.
  size_t unwind(const session::Thread& thread, const perfdata::Sample& sample, unsigned max_stack,
                std::vector<session::CallchainFrame>* out);

  // unwind() for samples that wants() unwinding, nothing for the others: what perf adds after a
  // sample's own callchain (the kernel's frames, for --call-graph dwarf).
  size_t append_user_frames(const perfdata::PerfEventAttr& attr, const session::Thread& thread,
                            const perfdata::Sample& sample, unsigned max_stack,
                            std::vector<session::CallchainFrame>* out) {
    return wants(attr, sample) ? unwind(thread, sample, max_stack, out) : 0;
  }

  // The user frames of one sample as another DwarfUnwinder found them, over a replica of this
  // one's Machine (the reading thread of a pipelined replay unwinds ahead of the thread that
  // applies the records): each frame's address and the start of the map it was found in, which
  // names the same map in an identical address space. `complete`: the walk ended before the
  // limit it was given, so any max_stack can be served.
  struct AheadFrame {
    uint64_t ip = 0;
    uint64_t map_start = 0;
    bool has_map = false;
  };
  // Which sample frames were unwound for: a handler may unwind another sample while one is
  // delivered (an off-CPU sample keeps the user stack of an earlier one), which must not get
  // these frames.
  struct AheadKey {
    uint64_t time = 0, dyn_size = 0, regs_hash = 0;
    uint32_t pid = 0, tid = 0;
    bool operator==(const AheadKey&) const = default;
  };
  static AheadKey key_of(const perfdata::Sample& sample);
  struct Ahead {
    AheadKey key;
    std::span<const AheadFrame> frames;
    bool complete = false;
  };
  // unwind() calls until the next set_ahead() hand out `ahead` for the sample of its key
  // (nullptr: unwind as usual).
  void set_ahead(const Ahead* ahead) { ahead_ = ahead; }
  const DwarfUnwindOptions& options() const { return options_; }

  struct Stats {
    uint64_t samples = 0;        // unwind() calls that tried
    uint64_t ahead = 0;          // of these, served from frames unwound ahead (set_ahead)
    uint64_t dwfl_built = 0;     // Dwfl objects made (first use of a space, or rebuilt)
    uint64_t modules_reported = 0;
    uint64_t slow_walks = 0;     // walks with cached rules given up for libdwfl's
  };
  const Stats& stats() const { return stats_; }

  // Internal state of one unwind; public only for the libdwfl callbacks.
  enum class ModuleResult { kOk, kNoModule, kFailed, kStale };
  struct Walk;
  struct SpaceState;
  struct PcRules;

 private:
  struct FileState;

  FileState& file_of(const session::Dso& dso);
  SpaceState& space_of(const session::AddressSpace* space);
  void reset_space(SpaceState& state);
  size_t unwind_once(SpaceState& state, Walk& walk);
  const PcRules& rules_at(SpaceState& state, uint64_t pc);
  // Walks the stack with the rules of rules_at(), as libdwfl would; false when a frame needs a
  // rule it does not follow (the frames found so far are then to be dropped).
  bool walk_with_cached_rules(SpaceState& state, Walk& walk);
  // Keeps report_module()'s kOk answer for the addresses of both `map` and `mod`.
  void remember_ok(SpaceState& state, const session::AddressSpace* maps, const session::Map* map, Dwfl_Module* mod);

 public:
  // Used by the libdwfl callbacks.
  // frame_cb's checks, which the cached-rule walk makes too. enter_frame: the module of `pc`
  // must be reported before the walk goes past it; false stops the walk (a stale module asks for
  // a restart, an unreadable file keeps the return address as perf does). record_frame: records
  // the frame at `at` (the pc, less one for a return address) with its map; false when the walk
  // stops there or reached its limit; `result`: report_module's answer for `at`.
  bool enter_frame(Walk& walk, uint64_t pc);
  bool record_frame(Walk& walk, uint64_t at, ModuleResult* result);
  ModuleResult report_module(SpaceState& state, const session::Thread& thread, uint64_t pc,
                             const session::Map** map_out);
  bool read_file_word(const session::Thread& thread, uint64_t addr, uint64_t* value);

 private:
  const session::Machine& machine_;
  DwarfUnwindOptions options_;
  const Ahead* ahead_ = nullptr;
  std::unordered_map<const session::Dso*, std::unique_ptr<FileState>> files_;
  std::list<std::unique_ptr<SpaceState>> lru_;  // most recently used first
  std::unordered_map<const session::AddressSpace*, std::list<std::unique_ptr<SpaceState>>::iterator> spaces_;
  Stats stats_;
};

}  // namespace tperf::symbols
