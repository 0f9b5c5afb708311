// Deferred user callchains (kernel 6.19+): a sample taken in the kernel may end its callchain
// with [PERF_CONTEXT_USER_DEFERRED, cookie] instead of user frames; the user stack comes later,
// unwound at the task's return to user space, in one PERF_RECORD_CALLCHAIN_DEFERRED shared by
// every sample of that kernel entry. DeferredCallchains is the stage after time ordering that
// joins them, so every command reading through OrderedEvents sees whole stacks.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <unordered_map>
#include <vector>

#include "perfdata/error.h"
#include "perfdata/reader.h"

namespace tperf::session {

class DeferredCallchains {
 public:
  struct Options {
    // Bounds on the samples held back: a task that stays in the kernel (a long syscall, a
    // stuck task) never gets its deferred record while its samples keep coming. Past a bound
    // the oldest waiting sample (of that tid, or of all) is delivered with its kernel part
    // alone. 16384 samples is four seconds in one kernel entry at perf's 4000 Hz.
    size_t max_waiting_per_tid = 16384;
    size_t max_waiting = 65536;
    size_t max_waiting_bytes = 64 << 20;
  };

  struct Stats {
    uint64_t deferred_samples = 0;   // samples whose chain asked for a deferred user part
    uint64_t deferred_records = 0;   // CALLCHAIN_DEFERRED records
    uint64_t merged = 0;             // samples given the user part of a matching record
    uint64_t mismatched = 0;         // the tid's next record had another cookie (lost records)
    uint64_t never_completed = 0;    // still waiting at the end of the data
    uint64_t delivered_early = 0;    // let go without user part because a waiting bound was hit
    uint64_t unmatched_records = 0;  // records that found no waiting sample of their tid
    uint64_t malformed = 0;          // records that could not be decoded (see errors())
    size_t peak_waiting = 0;
    size_t peak_waiting_bytes = 0;
    bool any() const { return deferred_samples != 0 || deferred_records != 0; }
  };

  // The same signature as OrderedEvents::Deliver: the record's bytes are valid during the call.
  using Deliver = std::function<void(const perfdata::Record& rec, uint64_t time)>;

  DeferredCallchains(const perfdata::Reader& reader, Deliver deliver) : DeferredCallchains(reader, std::move(deliver), Options{}) {}
  DeferredCallchains(const perfdata::Reader& reader, Deliver deliver, Options options);
  DeferredCallchains(const DeferredCallchains&) = delete;
  DeferredCallchains& operator=(const DeferredCallchains&) = delete;

  // Takes the next record in time order. A deferred sample waits; a CALLCHAIN_DEFERRED delivers
  // the waiting samples of its tid (merged when the cookie matches, kernel part alone when it
  // does not) and is not delivered itself, as perf does when it merges. Everything else goes
  // straight through.
  void push(const perfdata::Record& rec, uint64_t time);
  // Whether push() may act on `rec` or hold it back: a CALLCHAIN_DEFERRED record, or a sample
  // while some event defers its user callchain. push() delivers any other record at once, so a
  // caller may deliver those itself.
  bool wants(const perfdata::Record& rec) {
    return rec.type == perfdata::kRecordCallchainDeferred ||
           (rec.type == perfdata::kRecordSample &&
            (reader_.attrs().size() == attrs_seen_ ? any_deferred_ : any_deferred_attr()));
  }
  bool any_deferred_attr();
  // End of the data: the samples still waiting go out with their kernel part alone.
  void flush_all();

  const Stats& stats() const { return stats_; }
  size_t waiting() const { return waiting_; }
  // Malformed deferred samples and records met (each with its file offset). A malformed sample
  // is delivered as it is (its consumer reports it when decoding); a malformed record is left out.
  const std::vector<perfdata::FormatError>& errors() const { return errors_; }

 private:
  struct Waiting {
    uint64_t seq = 0;
    uint64_t time = 0;
    uint64_t cookie = 0;
    size_t chain_pos = 0;  // byte offset of the callchain's nr in `bytes`
    uint64_t chain_nr = 0;
    perfdata::Record meta;  // every field but the spans
    std::vector<uint8_t> bytes;
  };
  struct Located {
    bool deferred = false;
    uint32_t tid = 0;
    uint64_t cookie = 0;
    size_t chain_pos = 0;
    uint64_t chain_nr = 0;
  };

  Located locate(const perfdata::Record& rec) const;  // throws FormatError
  void on_deferred_record(const perfdata::Record& rec);
  // Delivers the front sample of `tid` with the given user ips (merged) or none (kernel part alone).
  void deliver_front(uint32_t tid, const std::vector<uint64_t>* user_ips);
  void enforce_bounds(uint32_t tid);
  void compact_order();

  const perfdata::Reader& reader_;
  Deliver deliver_;
  Options options_;
  Stats stats_;
  std::vector<perfdata::FormatError> errors_;
  size_t attrs_seen_ = 0;  // reader_.attrs().size() when any_deferred_ was computed
  bool any_deferred_ = false;

  // Waiting samples per tid, oldest first; they leave a tid's queue only from its front (or all
  // at once), so `order_` (every waiting sample by arrival, stale entries skipped) can tell the
  // oldest overall and the end-of-data order without searching.
  std::unordered_map<uint32_t, std::deque<Waiting>> by_tid_;
  std::deque<std::pair<uint64_t, uint32_t>> order_;  // (seq, tid)
  uint64_t seq_ = 0;
  size_t waiting_ = 0;
  size_t waiting_bytes_ = 0;
  std::vector<uint8_t> out_;  // the re-encoded record being delivered
};

}  // namespace tperf::session
