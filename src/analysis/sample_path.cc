#include "analysis/sample_path.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <cstring>
#include <thread>


#include <fmt/format.h>

#include "perfdata/abi.h"
#include "perfdata/error.h"
#include "perfdata/reader.h"
#include "perfdata/records.h"
#include "perfdata/sample.h"
#include "session/machine.h"
#include "session/ordered_events.h"
#include "symbols/dwarf_unwind.h"
#include "symbols/resolver.h"
#include "symbols/symbolizer.h"
#include "util/handoff.h"
#include "util/workqueue.h"

namespace tperf::analysis {

namespace {

char level_of(uint8_t cpumode) {
  switch (cpumode) {
    case perfdata::kMiscKernel: return 'k';
    case perfdata::kMiscHypervisor: return 'H';
    case perfdata::kMiscGuestKernel: return 'g';
    case perfdata::kMiscGuestUser: return 'u';
    default: return '.';
  }
}

// A batch ends at kBatchBytes of records or kBatchRecords records. Read (not mapped) files give
// records that a batch copies, and its buffer stays resident while the batch waits in flight or
// as a spare (kBatchDepth and as many again): at 256 KiB that held 2-3 MB more at the dwarf
// recipe's peak (16 KiB records) than 128 KiB does.
constexpr size_t kBatchBytes = 128 << 10;
constexpr size_t kBatchRecords = 2048;
constexpr size_t kBatchDepth = 8;
// The deepest walk when unwinding ahead; a handler asking for more (script --max-stack) unwinds
// the rest itself.
constexpr unsigned kAheadMaxStack = 4096;

// Records as the ordering stage delivered them, for the thread that applies them. Every record
// passes through here, so an item is small: 32 bytes, written past the cache as the bytes are
// (util/handoff.h).
// A plain record (perfdata::plain_record: all records of an ordinary file) keeps only its time,
// offset and where its bytes are; the type, misc and size are read back from its header. Held by
// the ordering stage (Record::held: its chunk, or the reader's window it was read into, is kept
// until this batch is given back), it is not copied: `held` points to it there. Else it is copied into the byte buffer. Any other record (in
// the reader's mapping of the file, unpacked from COMPRESSED, from another file of a directory,
// with a payload, or byte-swapped) has its whole description in `odd`; one in the mapping
// (meta.stable) is kept where it is, the others are copied into the byte buffer.
struct alignas(64) RecordBatch {  // filled on one thread, applied on another: lines of its own
  static constexpr uint32_t kPlain = UINT32_MAX;
  struct Item {
    uint64_t time;
    uint64_t offset;
    const uint8_t* held;  // a held plain record's bytes, or nullptr
    uint32_t at;          // plain, not held: where its bytes start in `bytes`
    uint32_t odd;         // kPlain, or its index in `odd`
  };
  struct Odd {
    perfdata::RecordMeta meta;
    uint64_t payload_size;  // as announced (the payload kept may be empty)
    const uint8_t* stable;  // the record's bytes in the mapping, or nullptr: at `at` in `bytes`
    uint32_t at;            // where its bytes start in `bytes`, its payload after them
    uint32_t payload_len;   // payload bytes kept
  };
  util::HandoffArray<uint8_t> bytes;
  size_t in_place = 0;  // bytes of the records kept where they are (held, or in the mapping), for the size limit
  util::HandoffArray<Item> items;
  std::vector<Odd> odd;
  // Unwinding ahead: for items[i], ahead[i] (when ahead.size() > i and has_frames) holds its
  // frames in ahead_frames.
  struct AheadAt {
    symbols::DwarfUnwinder::AheadKey key;
    uint32_t at = 0, n = 0;
    bool has_frames = false, complete = false;
  };
  std::vector<AheadAt> ahead;
  std::vector<symbols::DwarfUnwinder::AheadFrame> ahead_frames;
  uint64_t progress = 0;     // data bytes read when the batch was closed
  std::exception_ptr error;  // reading failed after these records
  bool last = false;

  bool full() const { return item_count() >= kBatchRecords || size_bytes() >= kBatchBytes; }
  // Items are gathered in `staged_` first: lines only the filling thread touches, so that the
  // stores past the cache into `items` go a few whole lines at a time. One such store for each
  // item stalled the reading thread: 7% of report's time on the fp recipe at -j 2, nearly all
  // on that store. seal() writes what is left before the batch goes.
  size_t item_count() const { return items.size() + n_staged_; }
  void seal() {
    if (n_staged_) items.append(staged_, n_staged_);
    n_staged_ = 0;
  }
  // The caller ships the batch once full().
  void add(const perfdata::Record& rec, uint64_t time) {
    const size_t n = rec.bytes.size(), p = rec.payload.size();
    if (rec.held) {
      push_item({time, rec.offset, rec.bytes.data(), 0, kPlain});
      in_place += n;
      return;
    }
    if (!rec.stable && perfdata::plain_record(rec)) {
      push_item({time, rec.offset, nullptr, static_cast<uint32_t>(bytes.append(rec.bytes.data(), n)), kPlain});
      return;
    }
    const auto index = static_cast<uint32_t>(odd.size());
    if (rec.stable && p == 0) {
      odd.push_back({perfdata::RecordMeta::of(rec), rec.payload_size, rec.bytes.data(), 0, 0});
      push_item({time, rec.offset, nullptr, 0, index});
      in_place += n;
      return;
    }
    const size_t at = bytes.append(rec.bytes.data(), n);
    if (p) bytes.append(rec.payload.data(), p);
    perfdata::RecordMeta meta = perfdata::RecordMeta::of(rec);
    meta.stable = false;
    odd.push_back({meta, rec.payload_size, nullptr, static_cast<uint32_t>(at), static_cast<uint32_t>(p)});
    push_item({time, rec.offset, nullptr, 0, index});
  }
  size_t size_bytes() const { return bytes.size() + in_place; }
  // A plain item's bytes.
  const uint8_t* plain_at(const Item& it) const { return it.held ? it.held : bytes.data() + it.at; }
  uint32_t type_of(const Item& it) const {
    if (it.odd != kPlain) return odd[it.odd].meta.type;
    uint32_t type;
    std::memcpy(&type, plain_at(it), 4);
    return type;
  }
  // The bytes of an item (without its payload).
  std::span<const uint8_t> bytes_of(const Item& it) const {
    if (it.odd == kPlain) return {plain_at(it), size_in_header(plain_at(it))};
    const Odd& o = odd[it.odd];
    return {o.stable ? o.stable : bytes.data() + o.at, o.meta.size};
  }
  // The record of an item, its bytes valid as long as the batch is not given back (so for the
  // consumer's delivery, never Record::held).
  void fill(perfdata::Record& rec, const Item& it) const {
    if (it.odd == kPlain) {
      const uint8_t* at = plain_at(it);
      perfdata::RecordMeta meta;
      meta.offset = it.offset;
      std::memcpy(&meta.type, at, 4);
      std::memcpy(&meta.misc, at + 4, 2);
      meta.size = size_in_header(at);
      meta.fill(rec, at);
      return;
    }
    const Odd& o = odd[it.odd];
    if (o.stable) {
      o.meta.fill(rec, o.stable, {}, o.payload_size);
      return;
    }
    const uint8_t* at = bytes.data() + o.at;
    o.meta.fill(rec, at, {at + o.meta.size, o.payload_len}, o.payload_size);
  }
  void clear() {
    bytes.clear();
    in_place = 0;
    items.clear();
    n_staged_ = 0;
    odd.clear();
    ahead.clear();
    ahead_frames.clear();
    progress = 0;
    error = nullptr;
    last = false;
  }

 private:
  static constexpr uint32_t kStaged = 8;  // 4 lines
  void push_item(const Item& it) {
    staged_[n_staged_++] = it;
    if (n_staged_ == kStaged) seal();
  }
  alignas(64) Item staged_[kStaged];
  uint32_t n_staged_ = 0;

  static uint16_t size_in_header(const uint8_t* at) {
    uint16_t size;
    std::memcpy(&size, at + 6, 2);
    return size;
  }
};
static_assert(sizeof(RecordBatch::Item) == 32);

// The hand-over between the two stages: at most `depth` batches wait, emptied ones come back
// for reuse, and close() (the applying side leaves early) makes every later put() fail.
class alignas(64) BatchChannel {  // both threads lock it: lines of its own, apart from their locals
 public:
  explicit BatchChannel(size_t depth) : depth_(depth) {}

  // A full channel takes batches again once half of it was taken: the reading thread, when it is
  // ahead, then sleeps and wakes once per depth/2 batches, not for every batch taken.
  bool put(std::unique_ptr<RecordBatch> b) {
    std::unique_lock lock(mu_);
    if (full_.size() >= depth_) space_.wait(lock, [&] { return full_.size() <= depth_ / 2 || closed_; });
    if (closed_) return false;
    full_.push_back(std::move(b));
    queued_.store(full_.size(), std::memory_order_relaxed);
    ++shipped_;
    ready_.notify_one();
    return true;
  }
  // Waits until every batch put so far was taken and given back (applied); false when closed.
  bool wait_applied() {
    std::unique_lock lock(mu_);
    applied_.wait(lock, [&] { return returned_ == shipped_ || closed_; });
    return !closed_;
  }
  std::unique_ptr<RecordBatch> take() {
    std::unique_lock lock(mu_);
    ready_.wait(lock, [&] { return !full_.empty(); });
    std::unique_ptr<RecordBatch> b = std::move(full_.front());
    full_.pop_front();
    queued_.store(full_.size(), std::memory_order_relaxed);
    if (full_.size() == depth_ / 2) space_.notify_one();
    return b;
  }
  std::unique_ptr<RecordBatch> fresh() {
    std::lock_guard lock(mu_);
    if (free_.empty()) {
      auto b = std::make_unique<RecordBatch>();
      b->bytes.reserve(kBatchBytes + 65536);
      b->items.reserve(kBatchRecords);
      return b;
    }
    std::unique_ptr<RecordBatch> b = std::move(free_.back());
    free_.pop_back();
    return b;
  }
  void give_back(std::unique_ptr<RecordBatch> b) {
    b->clear();
    std::lock_guard lock(mu_);
    ++returned_;
    if (free_.size() <= depth_) free_.push_back(std::move(b));
    // Only wait_applied() waits for this. (It once shared the put()s' condition: every batch
    // given back woke the reading thread waiting for room, for nothing, and each wake is a
    // futex call: 4% of script's time on the sys recipe.)
    if (returned_ == shipped_) applied_.notify_all();
  }
  // Batches put so far, and given back: batches are given back in the order they were put, so
  // the first `returned()` are (the ordering stage's hold tickets count on that).
  uint64_t shipped() {
    std::lock_guard lock(mu_);
    return shipped_;
  }
  uint64_t returned() {
    std::lock_guard lock(mu_);
    return returned_;
  }
  // Batches put and not yet taken (read without the lock: a hint).
  size_t queued() const { return queued_.load(std::memory_order_relaxed); }
  void close() {
    std::lock_guard lock(mu_);
    closed_ = true;
    full_.clear();
    queued_.store(0, std::memory_order_relaxed);
    space_.notify_all();
    applied_.notify_all();
  }

 private:
  const size_t depth_;
  std::mutex mu_;
  std::condition_variable ready_, space_, applied_;
  std::deque<std::unique_ptr<RecordBatch>> full_;
  std::vector<std::unique_ptr<RecordBatch>> free_;
  uint64_t shipped_ = 0, returned_ = 0;
  std::atomic<size_t> queued_{0};
  bool closed_ = false;
};

// What replay() does to a machine around a record other than a sample, besides the symbol hooks:
// after it applied the record, a KSYMBOL marks the kernel's maps changed, and a FINISHED_ROUND
// retires the threads that exited before the previous round. The handlers' machine and the
// replica that unwinds ahead go through this one sequence, so they stay the same machine.
struct MachineRounds {
  uint64_t last_time = 0;    // the newest timestamp delivered
  uint64_t retire_time = 0;  // the newest one before the previous FINISHED_ROUND

  void seen(uint64_t time) {
    if (time > last_time) last_time = time;
  }
  void applied(const perfdata::Record& rec, session::Machine& machine) {
    if (rec.type == perfdata::kRecordKsymbol) {
      machine.kernel_maps().touch();
    } else if (rec.type == perfdata::kRecordFinishedRound) {
      // Threads that exited before the previous round can no longer be named by a record.
      machine.retire_exited(retire_time);
      retire_time = last_time;
    }
  }
};

}  // namespace

bool replay_pipelined(const perfdata::Reader& reader, unsigned jobs) {
  if (reader.is_pipe()) return false;
  // By default on every file where there is a second core. It was once limited to files with
  // stack copies: two threads were no faster than one on frame-pointer files, because what the
  // reading thread wrote for every record shared cache lines with what the applying thread wrote
  // (see ReadingSide in replay()). Without that, and with the batches written past the cache
  // (util/handoff.h), report --no-children on the 1 GB fp recipe takes 0.84 s on two threads and
  // 1.19 s on one on this project's VM (bench/README.md, "Batches written past the cache").
  return util::job_count(jobs) >= 2;
}

void register_idle_task(session::Machine& machine) {
  perfdata::CommEvent idle;
  idle.pid = idle.tid = 0;
  idle.comm = "swapper";
  machine.on_comm(idle, 0);
}

std::unique_ptr<session::Machine> make_report_machine(const perfdata::Reader& reader) {
  session::Machine::Options mo;
  mo.keep_exited = true;
  mo.drop_exited_maps = true;
  mo.keep_maps_on_exec = true;
  return make_replay_machine(reader, mo);
}

std::unique_ptr<session::Machine> make_replay_machine(const perfdata::Reader& reader,
                                                      const session::Machine::Options& options) {
  auto machine = std::make_unique<session::Machine>(options);
  register_idle_task(*machine);
  // A pipe names its build ids at the end, after every module map was made (perf ignores them).
  if (!reader.is_pipe()) machine->dsos().apply_build_ids(reader.features().build_ids);
  return machine;
}

void process_non_sample(const perfdata::Reader& reader, const perfdata::Record& rec, uint64_t time,
                        session::Machine& machine, symbols::Symbolizer& symbolizer) {
  if (rec.type == perfdata::kRecordKsymbol) {
    const perfdata::EventAttr* attr = reader.attr_of(rec);
    unsigned trailer = attr ? perfdata::sample_id_trailer_size(attr->attr) : 0;
    symbolizer.on_ksymbol(perfdata::decode_ksymbol(rec.body(), rec.misc, trailer, reader.swapped(), rec.offset + 8));
  }
  machine.process(reader, rec, time);
}

analysis::Location locate(const symbols::ResolvedFrame& at, uint8_t cpumode, uint64_t ip, bool frame) {
  analysis::Location loc;
  loc.level = level_of(cpumode);
  loc.addr = ip;
  const session::Map* map = at.map;
  if (!map) return loc;
  loc.dso = map->dso;
  const symbols::Symbol* sym = at.at.sym;
  if (sym) {
    loc.sym = sym;
    loc.sym_start = sym->start;
  }
  // Addresses in the kernel image are shown as they are; in a module, as its offset.
  bool kernel_image = map->dso && map->dso->kernel && map->dso->name && map->dso->name->starts_with("[");
  if (!frame && !kernel_image) loc.addr = map->map_ip(ip);
  // symoff counts from the symbol in the DSO's terms.
  if (sym && !frame) loc.addr = at.at.addr;
  return loc;
}

analysis::HistEntry sample_entry(session::Machine& machine, const session::Thread& thread,
                                 const perfdata::Sample& sample, uint8_t cpumode, const symbols::ResolvedFrame& at) {
  analysis::HistEntry self;
  self.comm = thread.comm();
  if (!self.comm) self.comm = machine.strings().intern(fmt::format(":{}", thread.tid()));
  self.pid = thread.pid();
  self.tid = thread.tid();
  self.cpu = sample.has(perfdata::kSampleCpu) ? static_cast<int32_t>(sample.cpu) : -1;
  self.loc = locate(at, cpumode, sample.ip, false);
  self.cpumode = cpumode;
  return self;
}

SymbolPreloader::SymbolPreloader(const session::Machine& machine, symbols::Symbolizer& symbolizer)
    : machine_(machine),
      symbolizer_(symbolizer),
      loaders_(std::make_unique<util::WorkQueue>(0, util::WorkQueueOptions{.name = "tperf-syms"})),
      listed_(std::any_of(machine.dsos().all().begin(), machine.dsos().all().end(),
                          [](const auto& d) { return d->listed; })) {}

SymbolPreloader::~SymbolPreloader() = default;  // runs what is queued, then joins

void SymbolPreloader::wait() { loaders_->flush(); }

void SymbolPreloader::begin() {
  if (!listed_) return;
  began_ = true;
  std::vector<const session::Dso*> listed;
  for (const auto& d : machine_.dsos().all()) {
    if (d->listed) listed.push_back(d.get());
  }
  symbolizer_.preload_ahead(listed, *loaders_);
}

void SymbolPreloader::on_new_maps() {
  const auto& all = machine_.dsos().all();
  if (all.size() == seen_ && unmapped_.empty()) return;
  for (; seen_ < all.size(); ++seen_) unmapped_.push_back(all[seen_].get());
  std::vector<const session::Dso*> ready;
  std::erase_if(unmapped_, [&](const session::Dso* d) {
    if (!d->kernel && d->first_pid < 0) return false;
    if (listed_ && !d->listed) return true;  // no sample is in it (see listed_)
    if (began_ && !d->kernel) {
      symbolizer_.confirm_ahead(*d);  // loading since begin(); its first process decides where its file is
    } else {
      ready.push_back(d);
    }
    return true;
  });
  symbolizer_.preload_async(ready, *loaders_);
}

namespace {

// Starts the early read of the kernel's symbols at the first sample taken in the kernel (or a
// guest's), when `armed`.
struct KernelSampleWatch {
  bool armed;
  symbols::Symbolizer& symbolizer;
  void see(const perfdata::Record& rec) {
    if (!armed || rec.type != perfdata::kRecordSample) return;
    const uint8_t mode = rec.misc & perfdata::kMiscCpumodeMask;
    if (mode != perfdata::kMiscKernel && mode != perfdata::kMiscGuestKernel) return;
    begin();
  }
  void begin() {
    armed = false;
    symbolizer.read_kernel_symbols_early();
  }
};

}  // namespace

ReplayResult replay(perfdata::Reader& reader, session::Machine& machine, symbols::Symbolizer& symbolizer,
                    SymbolPreloader* preloader, const ReplayHandlers& handlers) {
  ReplayResult result;
  std::vector<std::string>& problems = result.problems;
  // A pipe names its build ids in the stream (HEADER_BUILD_ID records), and a DSO's build id
  // decides which file gives its symbols (for the kernel: whether /proc/kallsyms may): loading
  // ahead on a worker would race with them. Symbols then load at first use, in stream order.
  if (reader.is_pipe()) preloader = nullptr;
  // The kernel's symbols load ahead, when symbols load ahead at all (a command that shows none
  // passes no preloader) and some event samples the kernel: from the start when the file says it
  // has kernel samples (below), else from the first sample taken in the kernel on, as this thread
  // hands it to its handler, which then looks up its frames. Not at the start for every file
  // whose event could sample the kernel: one that never did (the dwarf recipe) spent a fifth of
  // its CPU time on /proc/kallsyms for nothing. Not on the reading thread either: the
  // threads that read kallsyms, started there, took time from it (fp report --no-children -j 2:
  // 0.68-0.76 s against 0.63-0.70).
  KernelSampleWatch kernel_watch{
      preloader && std::any_of(reader.attrs().begin(), reader.attrs().end(),
                               [](const perfdata::EventAttr& ea) { return !ea.attr.flag(perfdata::kFlagExcludeKernel); }),
      symbolizer};
  // A file whose build-id table names a kernel DSO had samples in the kernel (perf record lists
  // the DSOs its samples hit): its read begins now, beside the reading and the loading of the
  // first files' symbols. At the first kernel sample it began when this thread needed it: on
  // the fp recipe this thread then waited 120 ms (20 kHz profile) for it, and the reading thread,
  // its batches all queued, as long, with a core left idle.
  if (kernel_watch.armed && std::any_of(machine.dsos().all().begin(), machine.dsos().all().end(),
                                        [](const auto& d) { return d->kernel && d->listed; })) {
    kernel_watch.begin();
  }
  if (preloader) preloader->begin();
  session::OrderedEvents::Options ordered_options;
  ordered_options.merge_deferred_callchains = handlers.merge_deferred_callchains;
  ordered_options.ordered = handlers.ordered;
  MachineRounds rounds;
  auto deliver = [&](const perfdata::Record& rec, uint64_t time) {
    if (handlers.stop && handlers.stop()) return;
    rounds.seen(time);
    try {
      if (rec.type == perfdata::kRecordSample) {
        kernel_watch.see(rec);
        if (handlers.on_sample) handlers.on_sample(rec, time);
        return;
      }
      if (rec.type == perfdata::kRecordLostSamples) {
        result.lost_samples += perfdata::decode_lost_samples(rec.body(), reader.swapped(), rec.offset + 8);
      } else if (rec.type == perfdata::kRecordLost) {
        ++result.lost_records;
        result.lost_events += perfdata::decode_lost(rec.body(), reader.swapped(), rec.offset + 8).lost;
      }
      if (handlers.applies && !handlers.applies(rec)) return;
      if (handlers.on_other) handlers.on_other(rec, time);
      process_non_sample(reader, rec, time, machine, symbolizer);
      if (preloader && (rec.type == perfdata::kRecordMmap || rec.type == perfdata::kRecordMmap2)) {
        preloader->on_new_maps();
      }
      rounds.applied(rec, machine);
      if (handlers.on_applied) handlers.on_applied(rec, time);
    } catch (const perfdata::FormatError& e) {
      problems.push_back(e.what());
    }
  };
  const uint64_t data_start = reader.is_pipe() ? 0 : reader.header().data.offset;
  auto finish = [&](const session::OrderedEvents& ordered) {
    for (const auto& e : ordered.deferred_errors()) problems.push_back(e.what());
    result.deferred = ordered.deferred_stats();
  };

  // A repeated sample goes to on_repeat, as deliver() hands the others on.
  auto deliver_repeat = [&](const perfdata::Record& rec, uint64_t time) {
    if (handlers.stop && handlers.stop()) return;
    rounds.seen(time);
    try {
      handlers.on_repeat(rec, time);
    } catch (const perfdata::FormatError& e) {
      problems.push_back(e.what());
    }
  };
  SampleRepeats repeats(reader);

  if (!replay_pipelined(reader, handlers.jobs)) {
    // The sample delivered last, copied (the ordering stage's bytes are valid during the
    // delivery only), for the next one to be compared with; empty after any other record.
    std::vector<uint8_t> before;
    auto deliver_one = [&](const perfdata::Record& rec, uint64_t time) {
      if (!handlers.on_repeat) return deliver(rec, time);
      if (rec.type != perfdata::kRecordSample) {
        before.clear();
        return deliver(rec, time);
      }
      if (repeats.repeats(rec, before)) return deliver_repeat(rec, time);
      before.assign(rec.bytes.begin(), rec.bytes.end());
      deliver(rec, time);
    };
    session::OrderedEvents ordered(reader, deliver_one, ordered_options);
    perfdata::Record rec;
    uint64_t n = 0;
    std::string unreadable;  // why reading stopped before the end
    try {
      while (reader.next(rec)) {
        if (handlers.stop && handlers.stop()) break;
        ordered.push(rec);
        if (handlers.on_progress && (++n & 1023) == 0) handlers.on_progress(rec.offset > data_start ? rec.offset - data_start : 0);
      }
    } catch (const perfdata::FormatError& e) {
      unreadable = e.what();
    }
    // What was read before any damage still counts: the records waiting in the queue go out.
    if (!handlers.stop || !handlers.stop()) ordered.flush_all();
    finish(ordered);
    if (!unreadable.empty()) problems.push_back(unreadable);
    return result;
  }

  // Two stages on two threads: a reading thread reads (and unpacks) the records and puts them in
  // time order, this thread applies them in that order, batch by batch. Only a file whose attrs
  // are all known before its data can be read this way (a pipe announces its events, and its
  // tracing data, as it goes); the reader is only read from while both run.
  BatchChannel channel(kBatchDepth);
  // What the reading thread changes for every record lives on cache lines of its own: next to
  // what this thread changes for every record (rounds.last_time above), each write made the other
  // core's copy stale, and two threads were slower than one.
  struct alignas(64) ReadingSide {
    std::atomic<bool> stopping{false};
    bool consumer_gone = false;  // a put() failed
    uint64_t progress = 0;
    std::unique_ptr<RecordBatch> current;
    std::unique_ptr<session::OrderedEvents> ordered;
  };
  auto side = std::make_unique<ReadingSide>();
  ReadingSide& rs = *side;
  rs.current = channel.fresh();
  auto ship = [&rs, &channel](bool last, std::exception_ptr error) {
    rs.current->last = last;
    rs.current->error = error;
    rs.current->progress = rs.progress;
    rs.current->seal();
    util::handoff_publish();
    if (!channel.put(std::move(rs.current))) rs.consumer_gone = true;
    rs.current = last ? nullptr : channel.fresh();
  };
  // Unwinding ahead (ReplayHandlers::unwinder): a replica of the machine and an unwinder of the
  // reading thread's own, fed as replay()'s deliver feeds the handlers' machine.
  struct Ahead {
    std::unique_ptr<session::Machine> machine;
    std::unique_ptr<symbols::DwarfUnwinder> unwinder;
    perfdata::Sample sample;
    std::vector<session::CallchainFrame> frames;
    MachineRounds rounds;
    // Whether the samples of the batch being filled are unwound here: only while the applying
    // thread lags (half the batches or more wait for it). When it waits for this thread instead,
    // it unwinds them itself, so that each thread does what the other has no time for. (From one
    // waiting batch on, this thread took so much that it set the pace: 0.23 s against 0.15 for
    // report on the dwarf recipe, where unwinding nothing ahead takes 0.21.)
    bool this_batch = false;
    bool always = false;  // UnwindAhead::kAlways
  };
  std::unique_ptr<Ahead> ahead;
  if (handlers.unwinder && handlers.replica && !handlers.applies) {
    const auto& attrs = reader.attrs();
    if (std::any_of(attrs.begin(), attrs.end(),
                    [](const perfdata::EventAttr& ea) { return symbols::DwarfUnwinder::copies_stacks(ea.attr); })) {
      ahead = std::make_unique<Ahead>();
      ahead->machine = handlers.replica();
      ahead->unwinder = std::make_unique<symbols::DwarfUnwinder>(*ahead->machine, handlers.unwinder->options());
      ahead->always = handlers.unwind_ahead == ReplayHandlers::UnwindAhead::kAlways;
    }
  }
  auto unwind_ahead = [&reader, &ahead, &channel](const perfdata::Record& rec, uint64_t time, RecordBatch& batch) {
    Ahead& a = *ahead;
    if (batch.item_count() == 1) a.this_batch = a.always || channel.queued() >= kBatchDepth / 2;  // a new batch
    a.rounds.seen(time);
    try {
      if (rec.type != perfdata::kRecordSample) {
        a.machine->process(reader, rec, time);
        a.rounds.applied(rec, *a.machine);
        return;
      }
      const int ai = reader.attr_index_of(rec);
      if (ai < 0) return;
      const perfdata::PerfEventAttr& attr = reader.attrs()[static_cast<size_t>(ai)].attr;
      reader.decode_sample(rec, a.sample);
      // Every handler makes the sample's thread known, as here.
      session::Thread& thread =
          a.machine->findnew_thread(static_cast<int32_t>(a.sample.pid), static_cast<int32_t>(a.sample.tid));
      if (!a.this_batch || !symbols::DwarfUnwinder::wants(attr, a.sample)) return;
      a.frames.clear();
      const size_t n = a.unwinder->unwind(thread, a.sample, kAheadMaxStack, &a.frames);
      const size_t item = batch.item_count() - 1;
      if (batch.ahead.size() <= item) batch.ahead.resize(item + 1);
      RecordBatch::AheadAt& at = batch.ahead[item];
      at.key = symbols::DwarfUnwinder::key_of(a.sample);
      at.at = static_cast<uint32_t>(batch.ahead_frames.size());
      at.n = static_cast<uint32_t>(n);
      at.has_frames = true;
      at.complete = n < kAheadMaxStack;
      for (const session::CallchainFrame& f : a.frames) {
        batch.ahead_frames.push_back({f.ip, f.map ? f.map->start : 0, f.map != nullptr});
      }
    } catch (const perfdata::FormatError&) {
      // The applying thread meets the same record and says what is wrong with it; the sample
      // is then unwound there, as without this stage.
    }
  };
  // The pointer is taken here, not the unique_ptr by reference: that lives on this thread's
  // stack, in a cache line with what this thread writes for every record (rounds, the record
  // being delivered), and reading it for every record made the reading thread wait on each.
  const bool unwinding_ahead = ahead != nullptr;
  // The ordering stage keeps the records it delivers until the batch they went into is given
  // back, so a batch points to them where a copy took a fifth of the reading thread's time
  // (report --no-children on the fp recipe, -j 2). The batch being filled is number shipped + 1.
  session::OrderedEvents::Options holding = ordered_options;
  holding.hold_ticket = [&channel] { return channel.shipped() + 1; };
  holding.released = [&channel] { return channel.returned(); };
  // And where the reader can keep its windows, the queue keeps records where they were read
  // instead of copying them into its chunks.
  if (reader.set_holding(true)) {
    holding.release_window = [&reader](uint64_t window) { reader.release_window(window); };
  }
  rs.ordered = std::make_unique<session::OrderedEvents>(reader, [&rs, &ship, unwinding_ahead, &unwind_ahead](
                                                                    const perfdata::Record& rec, uint64_t time) {
    if (rs.consumer_gone) return;
    rs.current->add(rec, time);
    if (unwinding_ahead) unwind_ahead(rec, time, *rs.current);
    if (rs.current->full()) ship(false, nullptr);
  }, std::move(holding));
  session::OrderedEvents& ordered = *rs.ordered;
  reader.defer_in_band(true);
  std::thread reading([&rs, &ship, &channel, &reader, &ordered, data_start] {
    pthread_setname_np(pthread_self(), "tperf-read");
    std::exception_ptr error;
    try {
      perfdata::Record rec;
      uint64_t n = 0;
      while (!rs.stopping.load(std::memory_order_relaxed) && !rs.consumer_gone && reader.next(rec)) {
        if (perfdata::Reader::applies_in_band(rec.type)) {
          if (rs.current->item_count() != 0) ship(false, nullptr);
          if (rs.consumer_gone || !channel.wait_applied()) break;
          reader.apply_in_band(rec);
        }
        ordered.push(rec);
        if ((++n & 1023) == 0) rs.progress = rec.offset > data_start ? rec.offset - data_start : 0;
      }
      if (!rs.stopping.load(std::memory_order_relaxed) && !rs.consumer_gone) ordered.flush_all();
    } catch (const perfdata::FormatError&) {
      // The data cannot be followed past here: what was read before still goes out, then the
      // applying thread says why the reading stopped.
      error = std::current_exception();
      try {
        if (!rs.stopping.load(std::memory_order_relaxed) && !rs.consumer_gone) ordered.flush_all();
      } catch (...) {
      }
    } catch (...) {
      error = std::current_exception();
    }
    if (!rs.consumer_gone) ship(true, error);
  });
  // Whatever way this thread leaves, the reading thread is told to stop and joined first.
  struct Join {
    std::thread& t;
    std::atomic<bool>& stopping;
    BatchChannel& channel;
    perfdata::Reader& reader;
    ~Join() {
      stopping.store(true, std::memory_order_relaxed);
      channel.close();
      t.join();
      reader.defer_in_band(false);
      reader.set_holding(false);  // no batch points into the windows any more
    }
  };
  std::exception_ptr error;
  {
    Join join{reading, rs.stopping, channel, reader};
    for (bool last = false; !last;) {
      std::unique_ptr<RecordBatch> batch = channel.take();
      bool stopped = false;
      perfdata::Record rec;
      symbols::DwarfUnwinder::Ahead unwound;
      for (size_t i = 0; i < batch->items.size(); ++i) {
        const RecordBatch::Item& it = batch->items[i];
        batch->fill(rec, it);
        // A repeat is told by the item before it in the batch, which this thread applied just
        // now: the comparison reads the record's lines that decoding it would have read (on the
        // reading thread it was a tenth of that thread's time). The first sample of a batch is
        // never one: a repeat missed per batch of thousands of records.
        if (handlers.on_repeat && rec.type == perfdata::kRecordSample && i > 0 &&
            batch->type_of(batch->items[i - 1]) == perfdata::kRecordSample &&
            repeats.repeats(rec, batch->bytes_of(batch->items[i - 1]))) {
          deliver_repeat(rec, it.time);
        } else if (i < batch->ahead.size() && batch->ahead[i].has_frames) {
          const RecordBatch::AheadAt& at = batch->ahead[i];
          unwound.frames = std::span(batch->ahead_frames).subspan(at.at, at.n);
          unwound.complete = at.complete;
          unwound.key = at.key;
          struct Handing {  // the frames are the unwinder's for this one delivery, whatever happens
            symbols::DwarfUnwinder& u;
            ~Handing() { u.set_ahead(nullptr); }
          } handing{*handlers.unwinder};
          handlers.unwinder->set_ahead(&unwound);
          deliver(rec, it.time);
        } else {
          deliver(rec, it.time);
        }
        if (handlers.stop && handlers.stop()) {
          stopped = true;
          break;
        }
      }
      if (handlers.on_progress) handlers.on_progress(batch->progress);
      last = batch->last || stopped;
      if (batch->last) error = batch->error;
      channel.give_back(std::move(batch));
    }
  }
  std::string unreadable;  // why reading stopped before the end
  if (error) {
    try {
      std::rethrow_exception(error);
    } catch (const perfdata::FormatError& e) {
      unreadable = e.what();
    }
  }
  finish(ordered);
  if (!unreadable.empty()) problems.push_back(unreadable);
  return result;
}

bool SampleRepeats::repeats(const perfdata::Record& rec, std::span<const uint8_t> before) {
  const size_t n = rec.bytes.size();
  if (before.size() != n || n < 8) return false;
  const int ai = reader_.attr_index_of(rec);
  if (ai < 0) return false;
  if (layouts_.size() <= static_cast<size_t>(ai)) layouts_.resize(reader_.attrs().size());
  Layout& l = layouts_[static_cast<size_t>(ai)];
  if (!l.known) {
    const uint64_t t = reader_.attrs()[static_cast<size_t>(ai)].attr.sample_type;
    l.known = true;
    l.eligible = (t & ~kFields) == 0;
    // The time follows the header and the identifier, ip and pid/tid words that are there.
    if (t & perfdata::kSampleTime) {
      l.time_at = 8 + 8 * static_cast<size_t>(std::popcount(t & (perfdata::kSampleIdentifier | perfdata::kSampleIp |
                                                                   perfdata::kSampleTid)));
    }
  }
  if (!l.eligible) return false;
  const uint8_t* a = rec.bytes.data();
  const uint8_t* b = before.data();
  if (l.time_at == 0 || l.time_at + 8 > n) return std::memcmp(a, b, n) == 0;
  return std::memcmp(a, b, l.time_at) == 0 && std::memcmp(a + l.time_at + 8, b + l.time_at + 8, n - l.time_at - 8) == 0;
}

EventHists::EventHists() = default;
EventHists::~EventHists() = default;
EventHists::EventHists(EventHists&&) noexcept = default;
EventHists& EventHists::operator=(EventHists&&) noexcept = default;

EventHists load_event_hists(const std::string& path, const std::vector<analysis::SortKey>& keys,
                            const symbols::SymbolizerOptions& options) {
  EventHists out;
  out.reader = perfdata::Reader::open(path);
  perfdata::Reader& reader = *out.reader;
  out.machine = make_report_machine(reader);
  session::Machine& machine = *out.machine;
  out.symbolizer = std::make_unique<symbols::Symbolizer>(machine, options);
  symbols::Symbolizer& symbolizer = *out.symbolizer;

  perfdata::Sample sample;
  symbols::Resolver resolver(machine, &symbolizer);
  ReplayHandlers handlers;
  handlers.on_sample = [&](const perfdata::Record& rec, uint64_t) {
    int ai = reader.attr_index_of(rec);
    if (ai < 0) return;
    reader.decode_sample(rec, sample);
    // Pipe files announce their events as they go.
    while (out.hists.size() <= static_cast<size_t>(ai)) out.hists.emplace_back(keys);
    session::Thread& thread = machine.findnew_thread(static_cast<int32_t>(sample.pid), static_cast<int32_t>(sample.tid));
    const uint8_t cpumode = rec.misc & perfdata::kMiscCpumodeMask;
    // Without PERIOD in the samples every one stands for the fixed period of its event (-c).
    const uint64_t period =
        sample.has(perfdata::kSamplePeriod) ? sample.period : reader.attrs()[static_cast<size_t>(ai)].attr.sample_period;
    out.hists[static_cast<size_t>(ai)].add(
        sample_entry(machine, thread, sample, cpumode, resolver.resolve(&thread, cpumode, sample.ip)),
        period);
  };
  out.problems = replay(reader, machine, symbolizer, nullptr, handlers).problems;
  while (out.hists.size() < reader.attrs().size()) out.hists.emplace_back(keys);
  return out;
}

}  // namespace tperf::analysis
