#include "session/deferred_callchains.h"

#include <algorithm>
#include <cstring>

#include "perfdata/abi.h"
#include "perfdata/byte_reader.h"
#include "perfdata/records.h"

namespace tperf::session {

using perfdata::ByteReader;
using perfdata::Record;

namespace {

// A perf.data record is at most 65535 bytes (u16 size): a merged chain must fit in one.
constexpr size_t kMaxRecordSize = 0xffff;

void put_u64(uint8_t* p, uint64_t v, bool swap) {
  if (swap) v = __builtin_bswap64(v);
  std::memcpy(p, &v, 8);
}

uint64_t get_u64(const uint8_t* p, bool swap) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return swap ? __builtin_bswap64(v) : v;
}

}  // namespace

DeferredCallchains::DeferredCallchains(const perfdata::Reader& reader, Deliver deliver, Options options)
    : reader_(reader), deliver_(std::move(deliver)), options_(options) {}

bool DeferredCallchains::any_deferred_attr() {
  // Pipe mode announces its attrs as records: look again whenever their number changed.
  if (reader_.attrs().size() != attrs_seen_) {
    attrs_seen_ = reader_.attrs().size();
    any_deferred_ = std::any_of(reader_.attrs().begin(), reader_.attrs().end(), [](const perfdata::EventAttr& ea) {
      return ea.attr.flag(perfdata::kFlagDeferCallchain) && (ea.attr.sample_type & perfdata::kSampleCallchain);
    });
  }
  return any_deferred_;
}

// Finds the callchain inside a SAMPLE of a defer_callchain event without decoding the rest:
// only the fields in front of it (fixed sizes, and READ whose size the read_format gives).
DeferredCallchains::Located DeferredCallchains::locate(const Record& rec) const {
  using namespace perfdata;
  Located out;
  const EventAttr* ea = reader_.attr_of(rec);
  if (!ea) return out;
  const PerfEventAttr& a = ea->attr;
  const uint64_t t = a.sample_type;
  if (!a.flag(kFlagDeferCallchain) || !(t & kSampleCallchain)) return out;
  const bool swap = reader_.swapped();
  ByteReader r(rec.bytes, swap, rec.offset);
  r.skip(8, "sample header");
  if (t & kSampleIdentifier) r.skip(8, "sample identifier");
  if (t & kSampleIp) r.skip(8, "sample ip");
  // perf gives a sample without TID the tid -1; a deferred record without one gets -1 too.
  out.tid = UINT32_MAX;
  if (t & kSampleTid) {
    r.u32("sample pid");
    out.tid = r.u32("sample tid");
  }
  for (uint64_t bit : {kSampleTime, kSampleAddr, kSampleId, kSampleStreamId, kSampleCpu, kSamplePeriod}) {
    if (t & bit) r.skip(8, "sample field");
  }
  if (t & kSampleRead) {
    const uint64_t rf = a.read_format;
    const size_t times = ((rf & kReadTotalTimeEnabled) ? 8 : 0) + ((rf & kReadTotalTimeRunning) ? 8 : 0);
    const size_t per_value = 8 + ((rf & kReadId) ? 8 : 0) + ((rf & kReadLost) ? 8 : 0);
    if (rf & kReadGroup) {
      uint64_t nr = r.u64("read nr");
      r.skip(times, "read times");
      if (nr > r.remaining() / per_value) r.fail("read values", per_value);
      r.skip(static_cast<size_t>(nr) * per_value, "read values");
    } else {
      r.skip(times + per_value, "read value");
    }
  }
  out.chain_pos = r.pos();
  uint64_t nr = r.u64("callchain nr");
  if (nr > r.remaining() / 8) r.fail("callchain", 8);
  out.chain_nr = nr;
  if (nr >= 2) {
    const uint8_t* last = r.cursor() + (nr - 2) * 8;
    if (get_u64(last, swap) == kContextUserDeferred) {
      out.deferred = true;
      out.cookie = get_u64(last + 8, swap);
    }
  }
  return out;
}

void DeferredCallchains::push(const Record& rec, uint64_t time) {
  if (rec.type == perfdata::kRecordCallchainDeferred) {
    try {
      on_deferred_record(rec);
    } catch (const perfdata::FormatError& e) {
      ++stats_.malformed;
      errors_.push_back(e);
    }
    compact_order();
    return;
  }
  if (rec.type != perfdata::kRecordSample || !any_deferred_attr()) {
    deliver_(rec, time);
    return;
  }
  Located at;
  try {
    at = locate(rec);
  } catch (const perfdata::FormatError&) {
    // Its consumer decodes it and reports the damage where it reports any other sample's.
    deliver_(rec, time);
    return;
  }
  if (!at.deferred) {
    deliver_(rec, time);
    return;
  }
  ++stats_.deferred_samples;
  Waiting w;
  w.seq = seq_++;
  w.time = time;
  w.cookie = at.cookie;
  w.chain_pos = at.chain_pos;
  w.chain_nr = at.chain_nr;
  w.meta = rec;
  w.meta.bytes = {};
  w.meta.payload = {};
  w.meta.stable = false;  // delivered from a buffer of this stage
  w.meta.held = false;
  w.bytes.assign(rec.bytes.begin(), rec.bytes.end());
  waiting_bytes_ += w.bytes.size();
  ++waiting_;
  by_tid_[at.tid].push_back(std::move(w));
  order_.emplace_back(seq_ - 1, at.tid);
  stats_.peak_waiting = std::max(stats_.peak_waiting, waiting_);
  stats_.peak_waiting_bytes = std::max(stats_.peak_waiting_bytes, waiting_bytes_);
  enforce_bounds(at.tid);
  compact_order();
}

// perf delivers the waiting samples when the record arrives, in the order they came: samples of
// other tasks (and side-band records) stamped between a sample and its record are delivered
// first, and `perf script` shows them first. Delivering here, in time order of the records,
// gives the same order.
void DeferredCallchains::on_deferred_record(const Record& rec) {
  using namespace perfdata;
  ++stats_.deferred_records;
  const EventAttr* ea = reader_.attr_of(rec);
  uint32_t tid = UINT32_MAX;
  std::span<const uint8_t> body = rec.body();
  if (ea && ea->attr.sample_id_all()) {
    Sample sid;
    if (reader_.decode_sample_id(rec, sid) && sid.has(kSampleTid)) tid = sid.tid;
    const size_t trailer = sample_id_trailer_size(ea->attr);
    if (trailer > body.size()) throw FormatError(rec.offset, "CALLCHAIN_DEFERRED shorter than its sample_id");
    body = body.first(body.size() - trailer);
  }
  CallchainDeferredEvent e = decode_callchain_deferred(body, rec.misc, reader_.swapped(), rec.offset + 8);
  auto it = by_tid_.find(tid);
  if (it == by_tid_.end()) {
    ++stats_.unmatched_records;
    return;
  }
  // One record completes every sample of the tid's kernel entry; any older sample left (its
  // own record lost) gets its kernel part alone, as perf leaves it unmerged.
  for (size_t n = it->second.size(); n > 0; --n) {
    const bool match = by_tid_.find(tid)->second.front().cookie == e.cookie;
    ++(match ? stats_.merged : stats_.mismatched);
    deliver_front(tid, match ? &e.ips : nullptr);
  }
}

void DeferredCallchains::deliver_front(uint32_t tid, const std::vector<uint64_t>* user_ips) {
  auto it = by_tid_.find(tid);
  Waiting w = std::move(it->second.front());
  it->second.pop_front();
  if (it->second.empty()) by_tid_.erase(it);
  --waiting_;
  waiting_bytes_ -= w.bytes.size();

  // The chain without [USER_DEFERRED, cookie]; merged, PERF_CONTEXT_USER and the user ips
  // follow, as the kernel writes an in-place user chain. (perf keeps USER_DEFERRED as the
  // marker and reads it as USER; perf 6.1 drops any chain with a marker it does not know, and
  // `tperf convert` writes these records for it.)
  const bool swap = reader_.swapped();
  const size_t kernel_nr = static_cast<size_t>(w.chain_nr) - 2;
  const size_t chain_end = w.chain_pos + 8 + static_cast<size_t>(w.chain_nr) * 8;
  const size_t fixed = w.bytes.size() - (static_cast<size_t>(w.chain_nr) - kernel_nr) * 8;
  size_t user_nr = 0;
  if (user_ips && !user_ips->empty() && fixed + 8 <= kMaxRecordSize) {
    // A chain too long for one record keeps its innermost user frames.
    user_nr = std::min(user_ips->size(), (kMaxRecordSize - fixed - 8) / 8);
  }
  const size_t user_words = user_nr ? user_nr + 1 : 0;
  out_.resize(w.bytes.size() - 16 + user_words * 8);
  uint8_t* p = out_.data();
  std::memcpy(p, w.bytes.data(), w.chain_pos + 8 + kernel_nr * 8);
  put_u64(p + w.chain_pos, kernel_nr + user_words, swap);
  p += w.chain_pos + 8 + kernel_nr * 8;
  if (user_words) {
    put_u64(p, perfdata::kContextUser, swap);
    p += 8;
    for (size_t i = 0; i < user_nr; ++i, p += 8) put_u64(p, (*user_ips)[i], swap);
  }
  std::memcpy(p, w.bytes.data() + chain_end, w.bytes.size() - chain_end);
  uint16_t size = static_cast<uint16_t>(out_.size());
  if (swap) size = __builtin_bswap16(size);
  std::memcpy(out_.data() + 6, &size, 2);

  Record rec = w.meta;
  rec.bytes = out_;
  rec.size = static_cast<uint16_t>(out_.size());
  deliver_(rec, w.time);
}

void DeferredCallchains::enforce_bounds(uint32_t tid) {
  for (auto it = by_tid_.find(tid); it != by_tid_.end() && it->second.size() > options_.max_waiting_per_tid;
       it = by_tid_.find(tid)) {
    ++stats_.delivered_early;
    deliver_front(tid, nullptr);
  }
  while (waiting_ > 0 && (waiting_ > options_.max_waiting || waiting_bytes_ > options_.max_waiting_bytes)) {
    auto [seq, oldest_tid] = order_.front();
    order_.pop_front();
    auto it = by_tid_.find(oldest_tid);
    if (it == by_tid_.end() || it->second.front().seq > seq) continue;  // already delivered
    ++stats_.delivered_early;
    deliver_front(oldest_tid, nullptr);
  }
}

// `order_` keeps entries of samples already delivered until they reach its front; a task whose
// sample waits long at the front would let them pile up behind it.
void DeferredCallchains::compact_order() {
  if (order_.size() <= 2 * waiting_ + 1024) return;
  std::erase_if(order_, [this](const std::pair<uint64_t, uint32_t>& e) {
    auto it = by_tid_.find(e.second);
    return it == by_tid_.end() || it->second.front().seq > e.first;
  });
}

void DeferredCallchains::flush_all() {
  // In arrival (time) order, as perf flushes its list at the end of the session.
  while (!order_.empty()) {
    auto [seq, tid] = order_.front();
    order_.pop_front();
    auto it = by_tid_.find(tid);
    if (it == by_tid_.end() || it->second.front().seq > seq) continue;
    ++stats_.never_completed;
    deliver_front(tid, nullptr);
  }
}

}  // namespace tperf::session
