#include "analysis/profile_builder.h"

#include <fmt/format.h>

#include <sys/stat.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <stdexcept>
#include <span>
#include <unordered_map>

#include "analysis/off_cpu.h"
#include "analysis/sample_path.h"
#include "analysis/unwind_stats.h"
#include "perfdata/abi.h"
#include "perfdata/error.h"
#include "perfdata/reader.h"
#include "perfdata/records.h"
#include "perfdata/sample.h"
#include "session/callchain.h"
#include "session/machine.h"
#include "symbols/dwarf_unwind.h"
#include "symbols/resolver.h"
#include "symbols/symbolizer.h"
#include "util/spool.h"
#include "util/word_key_map.h"

namespace tperf::analysis {

namespace {

// perf's software clocks count nanoseconds; every other event counts occurrences.
std::string unit_of(const perfdata::PerfEventAttr& attr) {
  constexpr uint32_t kTypeSoftware = 1;
  constexpr uint64_t kCpuClock = 0, kTaskClock = 1;
  if (attr.type == kTypeSoftware && (attr.config == kCpuClock || attr.config == kTaskClock)) return "nanoseconds";
  return "count";
}

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

// A raw stack as the stack table keys it (util::WordKeyMap): the versions of the two address
// spaces its ips were looked up in (a map change renews them, so a key never outlives what it
// resolved to), the pid (symbols of JIT maps and mount namespaces depend on it), and the ips with
// their cpumodes.

struct FrameKey {
  const void* dso;
  const void* sym;
  uint64_t addr;
  bool kernel;
  bool operator==(const FrameKey&) const = default;
};
struct FrameKeyHash {
  size_t operator()(const FrameKey& k) const {
    uint64_t h = mix(reinterpret_cast<uintptr_t>(k.dso), reinterpret_cast<uintptr_t>(k.sym));
    return static_cast<size_t>(mix(mix(h, k.addr), k.kernel));
  }
};

struct CountKeyHash {
  size_t operator()(const std::pair<uint64_t, uint32_t>& k) const { return static_cast<size_t>(mix(k.first, k.second)); }
};

// cpu-clock and task-clock: their periods are nanoseconds of CPU.
bool is_time_event(const perfdata::PerfEventAttr& a) {
  return a.type == perfdata::kTypeSoftware && (a.config == 0 || a.config == 1);
}

// The event the off-CPU (and, for wall-clock, the on-CPU time) samples count in: the first
// sched_switch or offcpu-time event; -1 when there is none.
int off_cpu_event(const OffCpuTracker& t, const perfdata::Reader& reader) {
  for (size_t i = 0; i < reader.attrs().size(); ++i) {
    if (t.is_switch_event(static_cast<int>(i)) || t.is_offcpu_time_event(static_cast<int>(i))) return static_cast<int>(i);
  }
  return -1;
}

// With --off-cpu the switches (and perf's offcpu-time samples) weigh nanoseconds.
std::string off_cpu_unit(const OffCpuTracker& t, int attr_index, const perfdata::PerfEventAttr& attr) {
  if (t.is_switch_event(attr_index) || t.is_offcpu_time_event(attr_index)) return "nanoseconds";
  return unit_of(attr);
}

class Builder {
 public:
  Builder(perfdata::Reader& reader, session::Machine& machine, symbols::Symbolizer& symbolizer,
          symbols::DwarfUnwinder& unwinder, const ProfileOptions& options, Profile& out, const OffCpuTracker* off_cpu)
      : reader_(reader), machine_(machine), symbolizer_(symbolizer), resolver_(machine, &symbolizer),
        unwinder_(unwinder), options_(options), out_(out), unwind_(resolver_), off_cpu_(off_cpu),
        wall_event_(off_cpu && options.wall_clock ? off_cpu_event(*off_cpu, reader) : -1) {}

  // What the replay counted of the LOST and LOST_SAMPLES records.
  void add_lost(const ReplayResult& r) {
    out_.lost_samples += r.lost_samples;
    unwind_.add_lost(r.lost_records, r.lost_events, r.lost_samples);
  }

  void on_sample(const perfdata::Record& rec) {
    const int ai = reader_.attr_index_of(rec);
    if (ai < 0) return;
    // Off-CPU: a switch-out weighs its interval; a thread's final switch (no interval, or an
    // empty one) has no time to show.
    std::optional<uint64_t> off_cpu_weight;
    int event_ai = ai;  // the event the sample counts in
    if (off_cpu_ && !off_cpu_->is_offcpu_time_event(ai) && !off_cpu_->is_switch_event(ai)) {
      // Wall-clock: an on-CPU time sample counts, with its period, in the off-CPU event.
      if (wall_event_ < 0 || !is_time_event(reader_.attrs()[static_cast<size_t>(ai)].attr)) return;
      event_ai = wall_event_;
    } else if (off_cpu_ && !off_cpu_->is_offcpu_time_event(ai)) {
      const OffCpuInterval* iv = off_cpu_->interval_of(rec);
      if (!iv || iv->duration() == 0) return;
      off_cpu_weight = iv->duration();
    }
    reader_.decode_sample(rec, sample_);
    const auto listed = [](const std::vector<int32_t>& list, int32_t v) {
      return list.empty() || std::find(list.begin(), list.end(), v) != list.end();
    };
    if (!listed(options_.pids, static_cast<int32_t>(sample_.pid)) ||
        !listed(options_.tids, static_cast<int32_t>(sample_.tid))) {
      return;
    }
    const perfdata::PerfEventAttr& attr = reader_.attrs()[static_cast<size_t>(ai)].attr;
    while (out_.events.size() <= static_cast<size_t>(std::max(ai, event_ai))) {
      const auto& a = reader_.attrs()[out_.events.size()];
      out_.events.push_back({a.name, off_cpu_ ? off_cpu_unit(*off_cpu_, static_cast<int>(out_.events.size()), a.attr)
                                              : unit_of(a.attr)});
      if (static_cast<int>(out_.events.size()) - 1 == wall_event_) {
        out_.events.back().name = fmt::format("wall-clock ({} + on-CPU time)", a.name);
      }
    }
    session::Thread& thread = machine_.findnew_thread(static_cast<int32_t>(sample_.pid), static_cast<int32_t>(sample_.tid));
    const uint8_t cpumode = rec.misc & perfdata::kMiscCpumodeMask;
    const uint64_t weight =
        off_cpu_weight ? *off_cpu_weight : sample_.has(perfdata::kSamplePeriod) ? sample_.period : attr.sample_period;

    const bool has_chain = sample_.has(perfdata::kSampleCallchain);
    user_frames_.clear();
    if (has_chain) unwinder_.append_user_frames(attr, thread, sample_, 4096, &user_frames_);

    // Looked up by the raw stack first: a stack seen before (in the same address spaces) is
    // neither resolved nor walked again; its frames for the quality block are kept with it.
    key_.clear();
    key_.push_back(thread.maps() ? thread.maps()->version() : 0);
    key_.push_back(machine_.kernel_maps().version());
    key_.push_back(static_cast<uint64_t>(static_cast<uint32_t>(thread.pid())) | uint64_t{cpumode} << 32);
    key_.push_back(sample_.ip);
    key_.push_back(attr.sample_max_stack);  // the depth a chain counts as cut at, for the quality block
    if (has_chain) {
      key_.push_back(sample_.callchain.size());
      key_.insert(key_.end(), sample_.callchain.begin(), sample_.callchain.end());
    }
    key_.push_back(user_frames_.size());
    for (const auto& f : user_frames_) key_.push_back(f.ip);
    uint32_t stack;
    if (const uint32_t id = raw_stacks_.find(key_); id != util::WordKeyMap::kAbsent) {
      const RawStack& raw = known_[id];
      stack = raw.stack;
      unwind_.add_stack_copy(sample_, attr.sample_stack_user);
      unwind_.add(raw.verdict);
    } else {
      // The kernel's callchain (leaf first), then what DWARF unwinding of a stack copy adds; a
      // sample without a usable chain is its own ip.
      frames_.clear();
      const bool chain_ok = has_chain && session::resolve_callchain(machine_, &thread, sample_, ~0u, &frames_);
      if (!chain_ok) frames_.assign(1, {sample_.ip, cpumode, nullptr});
      for (auto& f : frames_) {
        if (!f.map) f.map = resolver_.find_map(&thread, f.cpumode, f.ip);
      }
      unwound_ = chain_ok ? user_frames_.size() : 0;
      if (chain_ok) frames_.insert(frames_.end(), user_frames_.begin(), user_frames_.end());
      // The quality block counts every sample with its whole chain, as tperf report's does.
      UnwindStatsCollector::StackVerdict verdict =
          unwind_.classify(sample_.callchain, has_chain, thread.pid(), attr.sample_max_stack, frames_);
      unwind_.add_stack_copy(sample_, attr.sample_stack_user);
      unwind_.add(verdict);
      stack = resolve_stack(thread, cpumode);
      // Bounded: where stacks rarely repeat, the cache is dropped and filled anew rather than
      // growing with the samples (the stack table itself keeps every resolved stack).
      if (cached_frames_ + frames_.size() > kMaxCachedFrames) {
        raw_stacks_.clear();
        known_.clear();
        cached_frames_ = 0;
      }
      known_.push_back({stack, std::move(verdict)});
      cached_frames_ += frames_.size() + key_.size();
      raw_stacks_.insert(key_);  // its id is its index in known_
    }

    const uint32_t thread_index = thread_of(thread);
    const uint32_t event = static_cast<uint32_t>(event_ai);
    const std::pair<uint64_t, uint32_t> ck{uint64_t{thread_index} << 32 | event, stack};
    auto [it, fresh] = count_index_.try_emplace(ck, static_cast<uint32_t>(out_.counts.size()));
    if (fresh) out_.counts.push_back({thread_index, event, stack, 0, 0});
    ProfileCount& c = out_.counts[it->second];
    ++c.samples;
    c.weight += weight;
    // offcpu-time samples are totals written at the end, stamped from ~0 << 32 (perf's, and
    // tperf's BPF way): no time of the recording.
    if (sample_.has(perfdata::kSampleTime) && reader_.attrs()[static_cast<size_t>(ai)].name != "offcpu-time") {
      if (out_.first_time == 0 || sample_.time < out_.first_time) out_.first_time = sample_.time;
      out_.last_time = std::max(out_.last_time, sample_.time);
    }
    if (options_.timed_samples) {
      out_.samples.push_back({sample_.time, thread_index, event, stack, weight, it->second, off_cpu_weight.has_value()});
    }
  }

  UnwindStats unwind_stats() const { return unwind_.finish(); }

 private:
  // Resolves frames_ (leaf first) into stack nodes; returns the innermost node.
  uint32_t resolve_stack(const session::Thread& thread, uint8_t cpumode) {
    const int32_t pid = thread.pid();
    // Walked leaf first: a frame without a map takes the level of the frame walked before it.
    resolved_.clear();
    bool kernel = (cpumode & perfdata::kMiscCpumodeMask) == perfdata::kMiscKernel;
    for (size_t i = 0; i < frames_.size(); ++i) {
      const session::CallchainFrame& f = frames_[i];
      if (f.map) kernel = (f.cpumode & perfdata::kMiscCpumodeMask) == perfdata::kMiscKernel;
      // The maps were found above (the unwinder's own for unwound frames): only the symbol here.
      const symbols::ResolvedFrame at =
          f.map ? symbols::ResolvedFrame{f.map, resolver_.symbol_in(*f.map, pid, f.ip)} : symbols::ResolvedFrame{};
      const Location loc = locate(at, f.cpumode, f.ip, true);
      // Frames unwound from a stack copy expand into the functions inlined there, innermost
      // first, as perf report shows them.
      const bool from_stack = i >= frames_.size() - unwound_;
      std::span<const symbols::Symbol* const> inlined;
      if (options_.inline_frames && from_stack && f.map && loc.sym) inlined = symbolizer_.inline_symbols(*f.map, pid, f.ip);
      if (inlined.empty()) {
        resolved_.push_back(frame_of(f, loc.sym, kernel, pid));
      } else {
        for (const symbols::Symbol* sym : inlined) resolved_.push_back(frame_of(f, sym, kernel, pid));
      }
    }
    uint32_t node = kNoIndex;
    for (auto it = resolved_.rbegin(); it != resolved_.rend(); ++it) node = node_of(node, *it);
    return node;
  }

  uint32_t node_of(uint32_t parent, uint32_t frame) {
    auto [it, fresh] = nodes_.try_emplace(uint64_t{parent} << 32 | frame, static_cast<uint32_t>(out_.stacks.size()));
    if (fresh) {
      const uint32_t depth = parent == kNoIndex ? 0 : out_.stacks[parent].depth + 1;
      out_.stacks.push_back({parent, frame, depth});
    }
    return it->second;
  }

  uint32_t frame_of(const session::CallchainFrame& f, const symbols::Symbol* sym, bool kernel, int32_t pid) {
    const session::Dso* dso = f.map ? f.map->dso : nullptr;
    auto [it, fresh] = frame_index_.try_emplace(FrameKey{dso, sym, f.ip, kernel}, static_cast<uint32_t>(out_.frames.size()));
    if (!fresh) return it->second;
    ProfileFrame pf;
    pf.address = f.ip;
    pf.kernel = kernel;
    pf.inlined = sym && sym->inlined;
    pf.rel_address = f.map && !(dso && dso->kernel) ? f.map->map_ip(f.ip) : f.ip;
    if (f.map) pf.mapping = mapping_of(*f.map);
    if (options_.srclines && f.map && sym && !sym->inlined) {
      std::string line = symbolizer_.srcline(*f.map, dso && dso->kernel ? -1 : pid, f.ip);
      const size_t colon = line.rfind(':');
      if (colon != std::string::npos && colon + 1 < line.size() &&
          std::all_of(line.begin() + static_cast<ptrdiff_t>(colon) + 1, line.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        pf.file = line.substr(0, colon);
        pf.line = static_cast<uint32_t>(std::strtoul(line.c_str() + colon + 1, nullptr, 10));
      }
    }
    pf.function = function_of(sym ? std::string(sym->name()) : std::string("[unknown]"), pf.file);
    out_.frames.push_back(std::move(pf));
    return it->second;
  }

  uint32_t function_of(const std::string& name, const std::string& file) {
    auto [it, fresh] = function_index_.try_emplace(name + '\0' + file, static_cast<uint32_t>(out_.functions.size()));
    if (fresh) out_.functions.push_back({name, file});
    return it->second;
  }

  uint32_t mapping_of(const session::Map& map) {
    auto [it, fresh] = mapping_index_.try_emplace(map.dso, static_cast<uint32_t>(out_.mappings.size()));
    if (fresh) {
      ProfileMapping m;
      if (map.dso) {
        m.path = map.dso->name ? *map.dso->name : std::string();
        m.short_name = std::string(map.dso->short_name());
        m.build_id = map.dso->build_id.hex();
        m.kernel = map.dso->kernel;
      }
      m.start = map.start;
      m.limit = map.end;
      m.offset = map.pgoff;
      out_.mappings.push_back(std::move(m));
    }
    return it->second;
  }

  uint32_t thread_of(const session::Thread& t) {
    const std::string* comm = t.comm_at(sample_.time);
    const std::tuple<int32_t, int32_t, const std::string*> key{t.pid(), t.tid(), comm};
    auto [it, fresh] = thread_index_.try_emplace(key, static_cast<uint32_t>(out_.threads.size()));
    if (fresh) out_.threads.push_back({t.pid(), t.tid(), comm ? *comm : fmt::format(":{}", t.tid())});
    return it->second;
  }

  struct ThreadKeyHash {
    size_t operator()(const std::tuple<int32_t, int32_t, const std::string*>& k) const {
      return static_cast<size_t>(mix(mix(static_cast<uint32_t>(std::get<0>(k)), static_cast<uint32_t>(std::get<1>(k))),
                                     reinterpret_cast<uintptr_t>(std::get<2>(k))));
    }
  };

  perfdata::Reader& reader_;
  session::Machine& machine_;
  symbols::Symbolizer& symbolizer_;
  symbols::Resolver resolver_;
  symbols::DwarfUnwinder& unwinder_;
  const ProfileOptions& options_;
  Profile& out_;
  UnwindStatsCollector unwind_;

  perfdata::Sample sample_;
  std::vector<session::CallchainFrame> frames_, user_frames_;
  size_t unwound_ = 0;
  std::vector<uint64_t> key_;
  std::vector<uint32_t> resolved_;
  // Per raw stack seen: its stack node and its verdict for the quality block.
  struct RawStack {
    uint32_t stack;
    UnwindStatsCollector::StackVerdict verdict;  // what it says about unwinding, for the quality block
  };
  std::vector<RawStack> known_;
  size_t cached_frames_ = 0;  // the frames and key words behind known_ and raw_stacks_
  static constexpr size_t kMaxCachedFrames = size_t{8} << 20;  // 8M words of keys
  util::WordKeyMap raw_stacks_;  // raw stack key -> index in known_
  std::unordered_map<uint64_t, uint32_t> nodes_;
  std::unordered_map<FrameKey, uint32_t, FrameKeyHash> frame_index_;
  std::unordered_map<std::string, uint32_t> function_index_;
  std::unordered_map<const void*, uint32_t> mapping_index_;
  std::unordered_map<std::tuple<int32_t, int32_t, const std::string*>, uint32_t, ThreadKeyHash> thread_index_;
  std::unordered_map<std::pair<uint64_t, uint32_t>, uint32_t, CountKeyHash> count_index_;
  const OffCpuTracker* off_cpu_;  // set: weights are off-CPU time
  int wall_event_;                 // >= 0: wall-clock, the event on-CPU time samples count in
};

// The tracker's intervals as the profile's thread states: each on the profile thread of its tid
// (the last one made, when its comm changed); a thread no sample named has no lane to show it.
void add_thread_states(const OffCpuTracker& tracker, Profile& out) {
  std::unordered_map<int32_t, uint32_t> by_tid;
  for (size_t i = 0; i < out.threads.size(); ++i) by_tid[out.threads[i].tid] = static_cast<uint32_t>(i);
  for (const OffCpuInterval& iv : tracker.intervals()) {
    if (iv.duration() == 0 || iv.state == OffCpuState::kDead) continue;
    auto it = by_tid.find(iv.tid);
    if (it == by_tid.end()) continue;
    out.thread_states.push_back({it->second, iv.start, iv.end, iv.state == OffCpuState::kRunnable});
  }
  std::stable_sort(out.thread_states.begin(), out.thread_states.end(), [](const auto& a, const auto& b) {
    return a.thread != b.thread ? a.thread < b.thread : a.start < b.start;
  });
  out.has_thread_states = true;
}

}  // namespace

Profile build_profile(const std::string& given_path, const ProfileOptions& options, UnwindStats* unwind_stats) {
  // Off-CPU analysis reads the input twice: a stream (standard input, a FIFO) is kept in a
  // temporary file.
  std::optional<util::SpooledInput> spool;
  if (options.off_cpu || options.wall_clock) spool.emplace(given_path);
  const std::string& path = spool ? spool->path() : given_path;
  auto reader = perfdata::Reader::open(path);
  Profile out;
  std::optional<OffCpuTracker> off_cpu;
  std::optional<OffCpuTracker> off_cpu_states;  // read for the thread states only
  if (options.off_cpu || options.wall_clock) {
    auto first = perfdata::Reader::open(path);
    off_cpu.emplace(track_off_cpu(*first, &out.problems));
    const OffCpuSource src = off_cpu->source();
    if (src == OffCpuSource::kNone || src == OffCpuSource::kSwitchRecords) throw std::runtime_error(describe_off_cpu(*off_cpu));
    out.info.emplace_back("off-CPU", describe_off_cpu(*off_cpu));
  } else if (options.thread_states && !reader->is_pipe() && util::rereadable_input(path)) {
    // The timeline's states: only when the file has sched_switch samples (known from its attrs).
    auto first = perfdata::Reader::open(path);
    if (OffCpuTracker(*first).source() == OffCpuSource::kSchedSwitch) {
      std::vector<std::string> problems;
      off_cpu_states.emplace(track_off_cpu(*first, &problems));
    }
  }
  std::unique_ptr<session::Machine> machine = make_report_machine(*reader);
  symbols::Symbolizer symbolizer(*machine, options.symbols);
  symbols::DwarfUnwinder unwinder(*machine, {options.symbols.symfs, options.symbols.buildid_dir});
  {
    SymbolPreloader preloader(*machine, symbolizer);
    Builder builder(*reader, *machine, symbolizer, unwinder, options, out, off_cpu ? &*off_cpu : nullptr);
    ReplayHandlers handlers;
    handlers.on_sample = [&](const perfdata::Record& rec, uint64_t) { builder.on_sample(rec); };
    handlers.unwinder = &unwinder;
    handlers.replica = [&reader] { return make_report_machine(*reader); };
    const ReplayResult replayed = replay(*reader, *machine, symbolizer, &preloader, handlers);
    out.problems.insert(out.problems.end(), replayed.problems.begin(), replayed.problems.end());
    builder.add_lost(replayed);
    if (unwind_stats) *unwind_stats = builder.unwind_stats();
  }
  if (options.thread_states) {
    const OffCpuTracker* states = off_cpu ? &*off_cpu : off_cpu_states ? &*off_cpu_states : nullptr;
    if (states && states->source() == OffCpuSource::kSchedSwitch) add_thread_states(*states, out);
  }
  // Events no sample named (pipe files announce theirs as they go).
  for (size_t i = out.events.size(); i < reader->attrs().size(); ++i) {
    const auto& a = reader->attrs()[i];
    out.events.push_back({a.name, off_cpu ? off_cpu_unit(*off_cpu, static_cast<int>(i), a.attr) : unit_of(a.attr)});
    if (off_cpu && options.wall_clock && static_cast<int>(i) == off_cpu_event(*off_cpu, *reader)) {
      out.events.back().name = fmt::format("wall-clock ({} + on-CPU time)", a.name);
    }
  }
  const auto& f = reader->features();
  auto info = [&](const char* key, const std::string& value) {
    if (!value.empty()) out.info.emplace_back(key, value);
  };
  if (f.has(perfdata::kFeatClockData) && f.clock_data.wall_clock_ns && out.first_time) {
    out.wall_time_ns = static_cast<int64_t>(f.clock_data.wall_clock_ns) +
                       (static_cast<int64_t>(out.first_time) - static_cast<int64_t>(f.clock_data.clockid_ns));
  } else if (struct stat st {}; !reader->is_pipe() &&
             ::stat(reader->header_file().c_str(), &st) == 0) {
    const int64_t end = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
    out.wall_time_ns = end - static_cast<int64_t>(out.last_time - out.first_time);
  }
  info("file", reader->path());
  info("hostname", f.hostname);
  info("os release", f.osrelease);
  info("perf version", f.version);
  info("arch", f.arch);
  info("cpu", f.cpudesc);
  std::string cmdline;
  for (const auto& a : f.cmdline) cmdline += (cmdline.empty() ? "" : " ") + a;
  info("cmdline", cmdline);
  if (out.lost_samples) info("lost samples", std::to_string(out.lost_samples));
  return out;
}

}  // namespace tperf::analysis
