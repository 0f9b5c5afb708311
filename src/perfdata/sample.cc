#include "perfdata/sample.h"

#include <fmt/format.h>

#include <bit>

namespace tperf::perfdata {

void Sample::clear() {
  // Field by field, keeping the vectors' capacity: samples are decoded in a loop, and building a
  // whole Sample to assign from cost more than the decoding of a short sample. A field added to
  // Sample must be reset here too (the static_assert below counts the bytes).
  // The fields of the first cache lines always; the others (stack copies, registers, branches,
  // the rarer fields at the end) only for the bits of `present`: decode_sample() and
  // decode_sample_id() write nothing outside the fields of the bits they put in `present`, so the
  // others are still clear. (Resetting them all was 4% of report's time on frame-pointer files,
  // mostly the stores to lines that decoding such samples never touches.)
  const uint64_t was = present;
  present = identifier = ip = 0;
  pid = tid = 0;
  time = addr = id = stream_id = 0;
  cpu = cpu_res = 0;
  period = 0;
  callchain.clear();
  chain_in_place = {};
  if (was & kSampleCallchain) {
    deferred_callchain = false;
    deferred_cookie = 0;
  }
  if (was & kSampleRead) {
    read.time_enabled = read.time_running = 0;
    read.values.clear();
  }
  if (was & kSampleRaw) raw = {};
  if (was & kSampleBranchStack) {
    branch_hw_idx = 0;
    branch_has_hw_idx = false;
    branches.clear();
    branch_counters.clear();
  }
  if (was & kSampleRegsUser) {
    regs_user.abi = regs_user.mask = 0;
    regs_user.regs.clear();
  }
  if (was & kSampleStackUser) {
    stack_user = {};
    stack_user_size = stack_dyn_size = 0;
  }
  if (was & (kSampleWeight | kSampleWeightStruct)) weight = 0;
  if (was & kSampleDataSrc) data_src = 0;
  if (was & kSampleTransaction) transaction = 0;
  if (was & kSampleRegsIntr) {
    regs_intr.abi = regs_intr.mask = 0;
    regs_intr.regs.clear();
  }
  if (was & kSamplePhysAddr) phys_addr = 0;
  if (was & kSampleCgroup) cgroup = 0;
  if (was & kSampleDataPageSize) data_page_size = 0;
  if (was & kSampleCodePageSize) code_page_size = 0;
  if (was & kSampleAux) aux = {};
}
#if defined(__GLIBCXX__) && defined(__x86_64__)
static_assert(sizeof(Sample) == 440, "a field was added to Sample: reset it in Sample::clear()");
#endif

namespace {

// An array of `n` words where fewer remain in r.
[[noreturn]] void fail_u64_array(const ByteReader& r, uint64_t n, const char* what) {
  r.fail(what, n > SIZE_MAX / 8 ? SIZE_MAX : static_cast<size_t>(n * 8));
}

void read_u64_array(ByteReader& r, uint64_t n, std::vector<uint64_t>& out, const char* what) {
  // Check the length before allocating: a corrupt count must not become a huge allocation.
  if (n > r.remaining() / 8) {
    out.clear();  // it may hold an earlier sample's values (decode_sample reuses them)
    fail_u64_array(r, n, what);
  }
  out.resize(static_cast<size_t>(n));
  if (!r.swapped()) {
    // memcpy from or to a null pointer is undefined even for 0 bytes; an empty vector's data() may be null.
    if (n != 0) std::memcpy(out.data(), r.cursor(), static_cast<size_t>(n) * 8);
    r.skip(static_cast<size_t>(n) * 8);
  } else {
    for (auto& v : out) v = r.u64();
  }
}

void decode_read(ByteReader& r, uint64_t read_format, ReadData& out) {
  if (read_format & kReadGroup) {
    uint64_t nr = r.u64("read_format nr");
    if (read_format & kReadTotalTimeEnabled) out.time_enabled = r.u64("time_enabled");
    if (read_format & kReadTotalTimeRunning) out.time_running = r.u64("time_running");
    uint64_t per = 1 + ((read_format & kReadId) ? 1 : 0) + ((read_format & kReadLost) ? 1 : 0);
    if (nr > r.remaining() / (per * 8)) r.fail("read_format group values", static_cast<size_t>(per * 8));
    out.values.resize(static_cast<size_t>(nr));
    for (auto& v : out.values) {
      v.value = r.u64();
      if (read_format & kReadId) v.id = r.u64();
      if (read_format & kReadLost) v.lost = r.u64();
    }
  } else {
    ReadValue v;
    v.value = r.u64("read value");
    if (read_format & kReadTotalTimeEnabled) out.time_enabled = r.u64("time_enabled");
    if (read_format & kReadTotalTimeRunning) out.time_running = r.u64("time_running");
    if (read_format & kReadId) v.id = r.u64("read id");
    if (read_format & kReadLost) v.lost = r.u64("read lost");
    out.values.push_back(v);
  }
}

void decode_regs(ByteReader& r, uint64_t mask, RegsDump& out, const char* what) {
  out.abi = r.u64(what);
  out.mask = mask;
  if (out.abi != 0) read_u64_array(r, static_cast<uint64_t>(std::popcount(mask)), out.regs, what);
}

}  // namespace

namespace {
// The fields of the flags word from the lowest: (width, position in the foreign word).
struct BranchField {
  unsigned width, foreign_pos;
};
// perf 6.1 moves the fields it knew when it learnt to read such files (up to type) and keeps the
// rest (spec, new_type, priv, reserved) as the low 40 bits of the foreign word; so does tperf, so
// both read a file alike, and the writer puts them back there.
constexpr BranchField kBranchFields[] = {{1, 63}, {1, 62}, {1, 61}, {1, 60}, {16, 44}, {4, 40}, {40, 0}};
}  // namespace

uint64_t branch_flags_from_foreign(uint64_t swapped_word) {
  uint64_t out = 0;
  unsigned pos = 0;
  for (const BranchField& f : kBranchFields) {
    const uint64_t mask = (uint64_t{1} << f.width) - 1;
    out |= ((swapped_word >> f.foreign_pos) & mask) << pos;
    pos += f.width;
  }
  return out;
}

uint64_t branch_flags_to_foreign(uint64_t flags) {
  uint64_t out = 0;
  unsigned pos = 0;
  for (const BranchField& f : kBranchFields) {
    const uint64_t mask = (uint64_t{1} << f.width) - 1;
    out |= ((flags >> pos) & mask) << f.foreign_pos;
    pos += f.width;
  }
  return out;
}

size_t decode_sample(std::span<const uint8_t> body, bool swap, uint64_t body_offset, const PerfEventAttr& attr,
                     Sample& s, SampleParts parts) {
  // The callchain keeps its length across the clear: resizing it to the next sample's length then
  // writes only the entries it grows by before the copy overwrites them (chains of one thread are
  // of much the same length), where growing from empty wrote every one.
  std::vector<uint64_t> chain = std::move(s.callchain);
  s.clear();
  const uint64_t t = attr.sample_type;
  s.present = t;
  ByteReader r(body, swap, body_offset);
  if (t & kSampleIdentifier) s.identifier = r.u64("sample identifier");
  if (t & kSampleIp) s.ip = r.u64("sample ip");
  if (t & kSampleTid) {
    s.pid = r.u32("sample pid");
    s.tid = r.u32("sample tid");
  }
  if (t & kSampleTime) s.time = r.u64("sample time");
  if (t & kSampleAddr) s.addr = r.u64("sample addr");
  if (t & kSampleId) s.id = r.u64("sample id");
  if (t & kSampleStreamId) s.stream_id = r.u64("sample stream_id");
  if (t & kSampleCpu) {
    s.cpu = r.u32("sample cpu");
    s.cpu_res = r.u32("sample cpu");
  }
  if (t & kSamplePeriod) s.period = r.u64("sample period");
  if (t & kSampleRead) decode_read(r, attr.read_format, s.read);
  if (t & kSampleCallchain) {
    uint64_t nr = r.u64("callchain nr");
    s.callchain = std::move(chain);
    if (parts == SampleParts::kWithoutCallchain) {
      s.callchain.clear();  // keeps its capacity for the next sample
      if (nr > r.remaining() / 8) fail_u64_array(r, nr, "callchain");
      r.skip(static_cast<size_t>(nr) * 8);
    } else if (parts == SampleParts::kChainInPlace && !r.swapped() &&
               reinterpret_cast<uintptr_t>(r.cursor()) % alignof(uint64_t) == 0) {
      if (nr > r.remaining() / 8) fail_u64_array(r, nr, "callchain");
      s.callchain.clear();  // keeps its capacity for the next sample
      s.chain_in_place = {reinterpret_cast<const uint64_t*>(r.cursor()), static_cast<size_t>(nr)};
      r.skip(static_cast<size_t>(nr) * 8);
    } else {
      read_u64_array(r, nr, s.callchain, "callchain");
    }
    const std::span<const uint64_t> chain = s.chain();
    if (parts != SampleParts::kWithoutCallchain && attr.flag(kFlagDeferCallchain) && nr >= 2 &&
        chain[nr - 2] == kContextUserDeferred) {
      s.deferred_callchain = true;
      s.deferred_cookie = chain[nr - 1];
    }
  }
  if (t & kSampleRaw) {
    uint32_t size = r.u32("raw size");
    s.raw = r.bytes(size, "raw data");
  }
  if (t & kSampleBranchStack) {
    uint64_t nr = r.u64("branch stack nr");
    if (attr.branch_sample_type & kBranchHwIndex) {
      s.branch_has_hw_idx = true;
      s.branch_hw_idx = r.u64("branch hw_idx");
    }
    if (nr > r.remaining() / 24) r.fail("branch stack entries", 24);
    s.branches.resize(static_cast<size_t>(nr));
    for (auto& b : s.branches) {
      b.from = r.u64();
      b.to = r.u64();
      b.flags = r.u64();
      if (r.swapped()) b.flags = branch_flags_from_foreign(b.flags);
    }
    if (attr.branch_sample_type & kBranchCounters) read_u64_array(r, nr, s.branch_counters, "branch counters");
  }
  if (t & kSampleRegsUser) decode_regs(r, attr.sample_regs_user, s.regs_user, "user regs");
  if (t & kSampleStackUser) {
    s.stack_user_size = r.u64("user stack size");
    if (s.stack_user_size > r.remaining()) r.fail("user stack data", static_cast<size_t>(std::min<uint64_t>(s.stack_user_size, SIZE_MAX)));
    s.stack_user = r.bytes(static_cast<size_t>(s.stack_user_size));
    if (s.stack_user_size != 0) {
      s.stack_dyn_size = r.u64("user stack dyn_size");
      if (s.stack_dyn_size > s.stack_user_size) {
        throw FormatError(r.offset() - 8, fmt::format("user stack dyn_size {} exceeds its size {}",
                                                      s.stack_dyn_size, s.stack_user_size));
      }
    }
  }
  if (t & (kSampleWeight | kSampleWeightStruct)) s.weight = r.u64("sample weight");
  if (t & kSampleDataSrc) s.data_src = r.u64("sample data_src");
  if (t & kSampleTransaction) s.transaction = r.u64("sample transaction");
  if (t & kSampleRegsIntr) decode_regs(r, attr.sample_regs_intr, s.regs_intr, "intr regs");
  if (t & kSamplePhysAddr) s.phys_addr = r.u64("sample phys_addr");
  if (t & kSampleCgroup) s.cgroup = r.u64("sample cgroup");
  if (t & kSampleDataPageSize) s.data_page_size = r.u64("sample data_page_size");
  if (t & kSampleCodePageSize) s.code_page_size = r.u64("sample code_page_size");
  if (t & kSampleAux) {
    uint64_t size = r.u64("aux size");
    if (size > r.remaining()) r.fail("aux data", static_cast<size_t>(std::min<uint64_t>(size, SIZE_MAX)));
    s.aux = r.bytes(static_cast<size_t>(size));
  }
  return r.remaining();
}

void decode_sample_id(std::span<const uint8_t> body, bool swap, uint64_t body_offset, const PerfEventAttr& attr,
                      Sample& s) {
  s.clear();
  const uint64_t t = attr.sample_type;
  s.present = t & (kSampleTid | kSampleTime | kSampleId | kSampleStreamId | kSampleCpu | kSampleIdentifier);
  unsigned size = sample_id_trailer_size(attr);
  if (size > body.size()) {
    throw FormatError(body_offset, fmt::format("record body of {} bytes is too short for a {}-byte sample_id",
                                               body.size(), size));
  }
  size_t start = body.size() - size;
  ByteReader r(body.subspan(start), swap, body_offset + start);
  if (t & kSampleTid) {
    s.pid = r.u32();
    s.tid = r.u32();
  }
  if (t & kSampleTime) s.time = r.u64();
  if (t & kSampleId) s.id = r.u64();
  if (t & kSampleStreamId) s.stream_id = r.u64();
  if (t & kSampleCpu) {
    s.cpu = r.u32();
    s.cpu_res = r.u32();
  }
  if (t & kSampleIdentifier) s.identifier = r.u64();
}

int sample_id_position(uint64_t t) {
  if (t & kSampleIdentifier) return 0;
  if (!(t & kSampleId)) return -1;
  return std::popcount(t & (kSampleIp | kSampleTid | kSampleTime | kSampleAddr));
}

int trailer_id_position(uint64_t t) {
  if (t & kSampleIdentifier) return 1;
  if (!(t & kSampleId)) return -1;
  return 1 + ((t & kSampleCpu) ? 1 : 0) + ((t & kSampleStreamId) ? 1 : 0);
}

}  // namespace tperf::perfdata
