// Delivers records in time order the way perf does: timestamped records are queued and, at each
// FINISHED_ROUND, those up to the largest timestamp seen before the previous round are sorted and
// delivered; FINISHED_INIT and the end of the data flush everything. Records without a timestamp
// (tool records, kernel records without sample_id_all) go through at once. Deferred user
// callchains are joined to their samples after the ordering (session/deferred_callchains.h),
// so every command reading through here sees merged chains.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "perfdata/reader.h"
#include "session/deferred_callchains.h"

namespace tperf::session {

// alignas(64): the replay driver runs it on its reading thread while another thread applies what
// it delivered; aligned, it shares no cache line with what that thread writes.
class alignas(64) OrderedEvents {
 public:
  struct Options {
    // Queued bytes above which the older half is delivered early (perf's default is 100 MB).
    size_t max_queued_bytes = 256 << 20;
    // Join samples that wait for a deferred user callchain to their CALLCHAIN_DEFERRED record,
    // as perf does by default; off, both go through raw (`perf script --no-merge-callchains`).
    bool merge_deferred_callchains = true;
    DeferredCallchains::Options deferred;
    // Off: every record is delivered at once, in file order (perf's ordered_events = false,
    // which `perf script --show-round-events` and `perf report --disable-order` ask for).
    // FINISHED_ROUND is counted and delivered as any record, and nothing is queued.
    bool ordered = true;
    // Holding: the consumer may keep the bytes of a queued plain record past its delivery
    // (Record::held), so that it need not copy them (the replay driver hands them to another
    // thread in batches). The consumer numbers what it keeps them for (its batches) 1, 2, ...
    // and lets them go in that order: hold_ticket() is the number of the one being filled, and
    // released() how many it let go. A chunk of the queue whose records were all delivered is
    // reused (or freed) once released() reaches the ticket it was given then. Both empty: a
    // record's bytes are valid during its delivery only.
    std::function<uint64_t()> hold_ticket;
    std::function<uint64_t()> released;
    // Holding, with a reader that holds its windows (perfdata::Reader::set_holding): a queued
    // plain record is kept where the reader has it, not copied, and each window is given back
    // to the reader (with this, on the reading thread) once it is read to the end, its records
    // were all delivered, and the consumer let them go.
    std::function<void(uint64_t)> release_window;
  };

  struct Stats {
    uint64_t queued = 0;          // timestamped records (queued, when ordering)
    uint64_t immediate = 0;       // records delivered at once (no timestamp)
    uint64_t out_of_order = 0;    // older than what was already delivered
    uint64_t rounds = 0;          // FINISHED_ROUND records seen
    uint64_t forced_flushes = 0;  // early deliveries because the queue grew past its limit
    size_t peak_queued_bytes = 0;
    size_t peak_queued_records = 0;
  };

  // Called for each record in order; `time` is its timestamp (0 when it has none). The record's
  // bytes are valid during the call only.
  using Deliver = std::function<void(const perfdata::Record& rec, uint64_t time)>;

  OrderedEvents(const perfdata::Reader& reader, Deliver deliver);
  OrderedEvents(const perfdata::Reader& reader, Deliver deliver, Options options);
  ~OrderedEvents();
  OrderedEvents(const OrderedEvents&) = delete;
  OrderedEvents& operator=(const OrderedEvents&) = delete;

  // Takes the next record in file order. FINISHED_ROUND and FINISHED_INIT are acted on and
  // then delivered themselves.
  void push(const perfdata::Record& rec);
  // Delivers everything still queued (at the end of the data), then the samples still waiting
  // for a deferred callchain.
  void flush_all();

  const Stats& stats() const { return stats_; }
  size_t queued_records() const;
  // The deferred-callchain stage's counts (all zero when merging is off or the file has none)
  // and the malformed deferred records it met.
  const DeferredCallchains::Stats& deferred_stats() const;
  const std::vector<perfdata::FormatError>& deferred_errors() const;
  // Samples held back waiting for their deferred callchain.
  size_t deferred_waiting() const { return deferred_ ? deferred_->waiting() : 0; }

 private:
  struct Queue;
  void flush_until(uint64_t limit);
  // Hands a record in time order on: through the deferred-callchain stage when it wants it.
  void emit(const perfdata::Record& rec, uint64_t time);
  void flush_half();

  const perfdata::Reader& reader_;
  Deliver deliver_;  // the consumer
  Options options_;
  Stats stats_;
  std::unique_ptr<Queue> queue_;
  std::unique_ptr<DeferredCallchains> deferred_;  // between the queue and the consumer, when merging
  uint64_t max_time_ = 0;      // largest timestamp queued so far
  uint64_t next_flush_ = 0;    // the limit of the next round's flush
  uint64_t last_flushed_ = 0;  // largest timestamp delivered
  bool flushed_any_ = false;
};

}  // namespace tperf::session
