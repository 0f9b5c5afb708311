#include "analysis/unwind_stats.h"

#include <algorithm>
#include <array>

#include "perfdata/abi.h"
#include "session/machine.h"
#include "symbols/resolver.h"
#include "symbols/symbolizer.h"

namespace tperf::analysis {

namespace {

// The kernel's default kernel.perf_event_max_stack, what a chain is cut at when the attr asks
// for no other depth.
constexpr unsigned kKernelMaxStack = 127;

bool is_user(uint8_t cpumode) { return cpumode == perfdata::kMiscUser || cpumode == perfdata::kMiscGuestUser; }

}  // namespace

bool is_thread_entry_point(std::string_view name) {
  // glibc's start code and thread start, musl's, the dynamic loader's entry, the clone
  // trampolines (a new thread's stack starts there), Go's runtime roots.
  static constexpr std::array<std::string_view, 19> kRoots = {
      "_start",          "__libc_start_main", "__libc_start_call_main", "__libc_start_main_impl",
      "start_thread",    "thread_start",      "clone",                  "clone3",
      "__clone",         "__clone3",          "__clone_internal",       "_dl_start_user",
      "_dl_start",       "__GI___clone",      "__GI___clone3",          "start",
      "runtime.goexit",  "runtime.rt0_go",    "runtime.mstart",
  };
  return std::find(kRoots.begin(), kRoots.end(), name) != kRoots.end();
}

UnwindStatsCollector::DsoEntry& UnwindStatsCollector::dso_entry(const session::CallchainFrame& f, int32_t pid) {
  auto [it, fresh] = dsos_.try_emplace(f.map->dso);
  if (fresh) it->second.why = resolver_.symbolizer()->symbol_problem(*f.map, pid);
  return it->second;
}

uint8_t UnwindStatsCollector::lookup(const session::CallchainFrame& f, int32_t pid) {
  uint64_t h = (f.ip ^ reinterpret_cast<uintptr_t>(f.map)) * 0x9e3779b97f4a7c15ULL;
  CacheSlot& slot = cache_[(h >> 40) & (cache_.size() - 1)];
  if (slot.map == f.map && slot.ip == f.ip && slot.dso == f.map->dso) return slot.result;
  const uint8_t result = verdict_of(resolver_.symbol_in(*f.map, pid, f.ip).sym);
  slot = CacheSlot{f.ip, f.map, f.map->dso, result};
  return result;
}

uint8_t UnwindStatsCollector::verdict_of(const symbols::Symbol* sym) {
  return sym ? (is_thread_entry_point(sym->name()) ? 3 : 1) : 0;
}

void UnwindStatsCollector::add_stack_copy(const perfdata::Sample& sample, uint64_t stack_size) {
  ++stats_.samples;
  if (stack_size > 0 && sample.has(perfdata::kSampleStackUser)) {
    ++stats_.stack_copies;
    stats_.stack_copy_size = std::max(stats_.stack_copy_size, stack_size);
    // The kernel saves at most the size asked for; a copy that used all of it was cut.
    if (sample.stack_dyn_size >= stack_size) ++stats_.stack_copies_full;
  }
}

UnwindStatsCollector::StackVerdict UnwindStatsCollector::classify(std::span<const uint64_t> callchain,
                                                                  bool has_callchain, int32_t pid,
                                                                  unsigned sample_max_stack,
                                                                  std::span<const session::CallchainFrame> frames,
                                                                  std::span<const symbols::ResolvedFrame> resolved) {
  StackVerdict v;
  v.has_callchain = has_callchain;
  // DSOs without symbols for the frames that landed in them.
  const session::CallchainFrame* last_user = nullptr;
  bool last_user_named = false;
  bool entry_reached = false;
  for (size_t i = 0; i < frames.size(); ++i) {
    const session::CallchainFrame& f = frames[i];
    // Past an entry point the walk reads whatever the start code left where a frame pointer
    // would be: those frames say nothing about the stack.
    if (entry_reached) break;
    const bool user = is_user(f.cpumode);
    bool named = false;
    if (f.map && f.map->dso) {
      const uint8_t found = resolved.empty() ? lookup(f, pid) : verdict_of(resolved[i].at.sym);
      if (found) {
        named = true;
        if (user) entry_reached = found == 3;
      } else {
        DsoEntry& d = dso_entry(f, pid);
        if (!d.why.empty() && std::find(v.dsos.begin(), v.dsos.end(), &d) == v.dsos.end()) v.dsos.push_back(&d);
      }
    }
    if (user) {
      if (!named) v.unknown_user = true;
      last_user = &f;
      last_user_named = named;
    }
  }
  if (!has_callchain || !last_user) return v;  // no chain, a kernel thread, or a chain without its user part
  v.limit = sample_max_stack ? sample_max_stack : kKernelMaxStack;
  size_t depth = 0;
  for (uint64_t ip : callchain) depth += ip < perfdata::kContextMax;
  using End = StackVerdict::End;
  if (entry_reached) {
    v.end = End::kComplete;
  } else if (!last_user->map) {
    // Also when the chain is as deep as the limit: a walk gone astray (a run of zeros, a loop)
    // fills it with garbage, and the cause is the frame where it went astray.
    v.end = End::kUnmapped;
  } else if (depth >= v.limit) {
    v.end = End::kDepthLimit;
  } else if (!last_user_named) {
    v.end = End::kUnsymbolized;
  } else {
    v.end = End::kEarly;
  }
  return v;
}

void UnwindStatsCollector::add(const StackVerdict& v, uint64_t samples) {
  for (DsoEntry* d : v.dsos) d->samples += samples;
  if (!v.has_callchain) return;
  stats_.with_callchain += samples;
  using End = StackVerdict::End;
  if (v.end == End::kNoUserPart) return;
  stats_.user_chains += samples;
  if (v.unknown_user) stats_.with_unknown += samples;
  stats_.max_depth = std::max(stats_.max_depth, v.limit);
  switch (v.end) {
    case End::kComplete: stats_.complete += samples; break;
    case End::kUnmapped: stats_.end_unmapped += samples; break;
    case End::kDepthLimit: stats_.depth_limit += samples; break;
    case End::kUnsymbolized: stats_.end_unsymbolized += samples; break;
    case End::kEarly: stats_.end_early += samples; break;
    case End::kNoUserPart: break;
  }
}

UnwindStats UnwindStatsCollector::finish() const {
  UnwindStats out = stats_;
  for (const auto& [dso, e] : dsos_) {
    if (e.samples == 0) continue;
    std::string name = dso && dso->name ? *dso->name : "[unknown]";
    out.dsos.push_back({std::move(name), e.why, e.samples});
  }
  std::sort(out.dsos.begin(), out.dsos.end(), [](const auto& a, const auto& b) {
    return a.samples != b.samples ? a.samples > b.samples : a.name < b.name;
  });
  return out;
}

}  // namespace tperf::analysis
