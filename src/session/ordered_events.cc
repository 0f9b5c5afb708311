#include "session/ordered_events.h"

#include <algorithm>
#include <cstring>
#include <deque>

namespace tperf::session {

using perfdata::Record;

namespace {

constexpr size_t kChunkSize = 1 << 20;

// Record bytes live in chunks; a chunk is freed once every record in it has been delivered.
struct Chunk {
  std::unique_ptr<uint8_t[]> data;
  size_t used = 0;
  size_t live = 0;
  size_t capacity = 0;
};

// A queued record: its fields and where its bytes are. Records with a payload after them
// (AUXTRACE, a pipe's tracing data) are not timestamped and never wait here.
// A record whose bytes stay where the reader has them (meta.stable: the file is mapped whole,
// Reader::Options::map) is not copied: `bytes` points there, and it takes no room in a chunk (chunk is kNoChunk).
struct Entry {  // 64 bytes
  uint64_t time;
  uint64_t seq;
  perfdata::RecordMeta meta;
  const uint8_t* bytes;
  uint32_t chunk;  // its chunk, or kNoChunk; in_window: the reader's window it lies in
  bool held;       // delivered as Record::held (Options::hold_ticket)
  bool in_window;  // kept where the reader read it (Options::release_window)
};

constexpr uint32_t kNoChunk = UINT32_MAX;
static_assert(sizeof(Entry) == 64);

}  // namespace

struct OrderedEvents::Queue {
  explicit Queue(const perfdata::Reader& r, const Options& o)
      : hold(o.hold_ticket && o.released), hold_windows(hold && o.release_window), reader(r), options(o) {}
  // Options::hold_ticket: plain records are delivered held, and emptied chunks wait in `retired`
  // (oldest first, each with its ticket) until the consumer lets them go.
  const bool hold;
  const bool hold_windows;  // Options::release_window
  const perfdata::Reader& reader;
  const Options& options;
  // Holding windows: the records queued in each window from `win_base` on (index: window -
  // win_base), whether it was given back, and the windows waiting for the consumer to let them
  // go (ticket, window), oldest first.
  struct WindowState {
    uint32_t live = 0;
    bool retired = false;
  };
  std::deque<WindowState> windows;
  uint64_t win_base = 1;
  uint64_t win_current = 0;  // the reader's window when the last record came
  std::deque<std::pair<uint64_t, uint64_t>> win_retired;
  WindowState& window_state(uint64_t w) { return windows[static_cast<size_t>(w - win_base)]; }
  // A record came from window `w`: the windows before it are read to the end, and those without
  // a queued record wait for the consumer.
  void note_window(uint64_t w) {
    if (w <= win_current) return;
    while (win_base + windows.size() <= w) windows.emplace_back();
    for (uint64_t old = std::max(win_current, win_base); old < w; ++old) {
      WindowState& st = window_state(old);
      if (st.live == 0 && !st.retired) retire_window(old);
    }
    win_current = w;
    give_back_windows();
  }
  void retire_window(uint64_t w) {
    window_state(w).retired = true;
    win_retired.emplace_back(options.hold_ticket(), w);
    while (!windows.empty() && windows.front().retired) {
      windows.pop_front();
      ++win_base;
    }
  }
  void give_back_windows() {
    let_go(win_retired, [&](uint64_t w) { options.release_window(w); });
  }
  // Holding: hands each (ticket, x) at the front of `waiting` whose ticket the consumer has let
  // go to `give`, oldest first, and drops it.
  template <class T, class Give>
  void let_go(std::deque<std::pair<uint64_t, T>>& waiting, Give give) {
    if (waiting.empty()) return;
    const uint64_t released = options.released();
    while (!waiting.empty() && waiting.front().first <= released) {
      give(waiting.front().second);
      waiting.pop_front();
    }
  }
  std::deque<std::pair<uint64_t, std::unique_ptr<Chunk>>> retired;
  std::vector<std::unique_ptr<Chunk>> chunks;  // index = Entry::chunk; freed ones are null
  std::vector<uint32_t> free_slots;
  // Delivered chunks kept for reuse: a fresh 1 MiB allocation is a fresh mmap whose pages the
  // kernel faults in and clears again, which cost more than the copy into them. At most
  // kSpareChunks are kept, so an emptied queue holds 32 MiB at most (never more than it
  // held at its peak).
  std::vector<std::unique_ptr<Chunk>> spare;
  static constexpr size_t kSpareChunks = 32;
  uint32_t current = UINT32_MAX;
  // pending[head, size) is queued; delivered entries before head are dropped in bulk (erasing the
  // front at every round moved the whole rest of the queue).
  std::vector<Entry> pending;
  size_t head = 0;
  size_t sorted_prefix = 0;  // pending[head, sorted_prefix) is known to be sorted
  size_t queued() const { return pending.size() - head; }
  uint64_t seq = 0;
  size_t bytes = 0;

  void add(const Record& rec, uint64_t time) {
    size_t n = rec.bytes.size();
    bytes += n;
    if (rec.stable) {
      pending.push_back({time, seq++, perfdata::RecordMeta::of(rec), rec.bytes.data(), kNoChunk, false, false});
      return;
    }
    if (hold_windows) {
      // A record read from a window was read from the current one; the others (unpacked from
      // COMPRESSED) ask the reader, whose windows move on under them.
      const uint64_t w = rec.window != 0 ? rec.window : reader.window_seq();
      if (w != win_current) note_window(w);
      if (rec.window != 0 && perfdata::plain_record(rec)) {
        ++window_state(w).live;
        // (Windows are 1 MiB at least: their numbers stay far below 2^32.)
        pending.push_back({time, seq++, perfdata::RecordMeta::of(rec), rec.bytes.data(), static_cast<uint32_t>(w),
                           true, true});
        return;
      }
    }
    if (current == UINT32_MAX || chunks[current]->capacity - chunks[current]->used < n) new_chunk(n);
    Chunk& c = *chunks[current];
    uint8_t* at = c.data.get() + c.used;
    std::memcpy(at, rec.bytes.data(), n);
    const bool held = hold && perfdata::plain_record(rec);
    pending.push_back({time, seq++, perfdata::RecordMeta::of(rec), at, current, held, false});
    c.used += n;
    ++c.live;
  }

  // Holding: a chunk whose records were all delivered waits for the consumer to let them go.
  void retire(uint32_t slot) {
    retired.emplace_back(options.hold_ticket(), std::move(chunks[slot]));
    free_slots.push_back(slot);
  }
  // Holding: the chunks the consumer let go become spares (or are freed).
  void take_back_released() {
    let_go(retired, [&](std::unique_ptr<Chunk>& c) {
      if (c->capacity == kChunkSize && spare.size() < kSpareChunks) spare.push_back(std::move(c));
    });
  }

  void new_chunk(size_t need) {
    if (hold) {
      // The chunk filled so far may have had all its records delivered already: it waits too.
      if (current != UINT32_MAX && chunks[current]->live == 0) retire(current);
      current = UINT32_MAX;
      take_back_released();
    }
    std::unique_ptr<Chunk> c;
    if (need <= kChunkSize && !spare.empty()) {
      c = std::move(spare.back());
      spare.pop_back();
      c->used = 0;
      c->live = 0;
    } else {
      c = std::make_unique<Chunk>();
      c->capacity = std::max(kChunkSize, need);
      c->data.reset(new uint8_t[c->capacity]);
    }
    if (!free_slots.empty()) {
      current = free_slots.back();
      free_slots.pop_back();
      chunks[current] = std::move(c);
    } else {
      current = static_cast<uint32_t>(chunks.size());
      chunks.push_back(std::move(c));
    }
  }

  void release(const Entry& e) {
    bytes -= e.meta.size;
    if (e.in_window) {
      WindowState& st = window_state(e.chunk);
      if (--st.live == 0 && e.chunk < win_current) retire_window(e.chunk);
      return;
    }
    if (e.chunk == kNoChunk) return;
    Chunk& c = *chunks[e.chunk];
    if (--c.live == 0 && e.chunk != current && hold) {
      retire(e.chunk);
    } else if (c.live == 0 && e.chunk != current) {
      if (c.capacity == kChunkSize && spare.size() < kSpareChunks) {
        spare.push_back(std::move(chunks[e.chunk]));
      } else {
        chunks[e.chunk].reset();
      }
      free_slots.push_back(e.chunk);
    } else if (c.live == 0 && !hold) {
      c.used = 0;  // the current chunk is empty again: reuse it from the start
    }
  }

  void sort() {
    if (sorted_prefix == pending.size()) return;
    auto less = [](const Entry& a, const Entry& b) { return a.time != b.time ? a.time < b.time : a.seq < b.seq; };
    // Records mostly arrive in order: sort the new tail, then merge it into the sorted head.
    auto first = pending.begin() + static_cast<std::ptrdiff_t>(head);
    auto mid = pending.begin() + static_cast<std::ptrdiff_t>(sorted_prefix);
    sort_runs(mid, pending.end(), less);
    if (mid != first && less(*mid, *(mid - 1))) std::inplace_merge(first, mid, pending.end(), less);
    sorted_prefix = pending.size();
  }

  // A round holds what each CPU's ring buffer had, one buffer after the other, each in time
  // order: a few sorted runs. They are merged pairwise (a pass per halving of their number)
  // into `scratch` and back, which reads and writes the records in order, where sorting them
  // compared and moved them about at random (3.5% of sys script). Many runs (records not in
  // order at all) are sorted.
  template <class Less>
  void sort_runs(std::vector<Entry>::iterator begin, std::vector<Entry>::iterator end, Less less) {
    runs.clear();
    runs.push_back(0);
    const size_t n = static_cast<size_t>(end - begin);
    for (size_t i = 1; i < n; ++i) {
      if (less(begin[static_cast<std::ptrdiff_t>(i)], begin[static_cast<std::ptrdiff_t>(i - 1)])) {
        runs.push_back(i);
        if (runs.size() > kMaxRuns) {
          std::sort(begin, end, less);
          return;
        }
      }
    }
    if (runs.size() == 1) return;
    runs.push_back(n);
    scratch.resize(n);
    Entry* from = &*begin;
    Entry* to = scratch.data();
    while (runs.size() > 2) {
      size_t kept = 0;
      for (size_t r = 0; r + 1 < runs.size(); r += 2) {
        const size_t lo = runs[r], hi = runs[r + 1], last = r + 2 < runs.size() ? runs[r + 2] : hi;
        std::merge(from + lo, from + hi, from + hi, from + last, to + lo, less);
        runs[kept++] = lo;
      }
      runs[kept++] = n;
      runs.resize(kept);
      std::swap(from, to);
    }
    if (from != &*begin) std::copy(from, from + n, begin);
  }
  static constexpr size_t kMaxRuns = 256;
  std::vector<size_t> runs;
  std::vector<Entry> scratch;
};

OrderedEvents::OrderedEvents(const perfdata::Reader& reader, Deliver deliver)
    : OrderedEvents(reader, std::move(deliver), Options{}) {}

OrderedEvents::OrderedEvents(const perfdata::Reader& reader, Deliver deliver, Options options)
    : reader_(reader), deliver_(std::move(deliver)), options_(std::move(options)), queue_(std::make_unique<Queue>(reader, options_)) {
  if (options_.merge_deferred_callchains) {
    deferred_ = std::make_unique<DeferredCallchains>(reader, deliver_, options_.deferred);
  }
}

const DeferredCallchains::Stats& OrderedEvents::deferred_stats() const {
  static const DeferredCallchains::Stats kNone;
  return deferred_ ? deferred_->stats() : kNone;
}

const std::vector<perfdata::FormatError>& OrderedEvents::deferred_errors() const {
  static const std::vector<perfdata::FormatError> kNone;
  return deferred_ ? deferred_->errors() : kNone;
}

OrderedEvents::~OrderedEvents() = default;

void OrderedEvents::emit(const Record& rec, uint64_t time) {
  // The deferred-callchain stage passes every record it does not want on at once: those go
  // straight to the consumer (one call less for each record of a file without deferred chains).
  if (deferred_ && deferred_->wants(rec)) {
    deferred_->push(rec, time);
  } else {
    deliver_(rec, time);
  }
}

size_t OrderedEvents::queued_records() const { return queue_->queued(); }

void OrderedEvents::push(const Record& rec) {
  using namespace perfdata;
  if (!options_.ordered) {
    // In file order: a timestamped record still travels with its time.
    uint64_t time = 0;
    if (rec.type == kRecordFinishedRound) {
      ++stats_.rounds;
    } else if (rec.type != kRecordFinishedInit && reader_.record_time(rec, &time)) {
      ++stats_.queued;
      if (flushed_any_ && time < last_flushed_) ++stats_.out_of_order;
      last_flushed_ = std::max(last_flushed_, time);
      flushed_any_ = true;
    } else {
      ++stats_.immediate;
    }
    emit(rec, time);
    return;
  }
  if (rec.type == kRecordFinishedRound) {
    ++stats_.rounds;
    flush_until(next_flush_);
    next_flush_ = max_time_;
    emit(rec, 0);
    return;
  }
  if (rec.type == kRecordFinishedInit) {
    flush_until(UINT64_MAX);
    emit(rec, 0);
    return;
  }
  uint64_t time = 0;
  if (!reader_.record_time(rec, &time)) {
    ++stats_.immediate;
    emit(rec, 0);
    return;
  }
  ++stats_.queued;
  if (flushed_any_ && time < last_flushed_) ++stats_.out_of_order;
  max_time_ = std::max(max_time_, time);
  queue_->add(rec, time);
  stats_.peak_queued_bytes = std::max(stats_.peak_queued_bytes, queue_->bytes);
  stats_.peak_queued_records = std::max(stats_.peak_queued_records, queue_->queued());
  if (queue_->bytes > options_.max_queued_bytes) {
    ++stats_.forced_flushes;
    flush_half();
  }
}

void OrderedEvents::flush_until(uint64_t limit) {
  Queue& q = *queue_;
  q.sort();
  size_t n = q.head;
  Record rec;
  while (n < q.pending.size() && q.pending[n].time <= limit) {
    const Entry& e = q.pending[n];
    e.meta.fill(rec, e.bytes);
    rec.held = e.held;
    last_flushed_ = std::max(last_flushed_, e.time);
    flushed_any_ = true;
    emit(rec, e.time);
    q.release(e);
    ++n;
  }
  q.head = n;
  if (q.head == q.pending.size()) {
    q.pending.clear();
    q.head = 0;
    q.sorted_prefix = 0;
  } else if (q.head >= q.pending.size() / 2) {
    q.pending.erase(q.pending.begin(), q.pending.begin() + static_cast<std::ptrdiff_t>(q.head));
    q.sorted_prefix -= q.head;
    q.head = 0;
  }
}

void OrderedEvents::flush_half() {
  Queue& q = *queue_;
  q.sort();
  if (q.queued() == 0) return;
  flush_until(q.pending[q.head + q.queued() / 2].time);
}

void OrderedEvents::flush_all() {
  flush_until(UINT64_MAX);
  if (deferred_) deferred_->flush_all();
}

}  // namespace tperf::session
