#include "perfdata/attr.h"

#include <fmt/format.h>

#include <bit>

namespace tperf::perfdata {

uint64_t reverse_bits_in_bytes(uint64_t v) {
  uint64_t out = 0;
  for (int byte = 0; byte < 8; ++byte) {
    uint8_t b = static_cast<uint8_t>(v >> (byte * 8));
    b = static_cast<uint8_t>(((b & 0xF0) >> 4) | ((b & 0x0F) << 4));
    b = static_cast<uint8_t>(((b & 0xCC) >> 2) | ((b & 0x33) << 2));
    b = static_cast<uint8_t>(((b & 0xAA) >> 1) | ((b & 0x55) << 1));
    out |= static_cast<uint64_t>(b) << (byte * 8);
  }
  return out;
}

uint32_t peek_attr_size(const ByteReader& r) {
  ByteReader copy = r;
  copy.skip(4, "perf_event_attr.type");
  return copy.u32("perf_event_attr.size");
}

PerfEventAttr decode_attr(ByteReader& r, uint32_t size) {
  if (size == 0) size = kAttrSizeVer0;
  if (size < kAttrSizeVer0) {
    throw FormatError(r.offset(), fmt::format("perf_event_attr size {} is smaller than 64", size));
  }
  ByteReader a = r.sub(size, "perf_event_attr");
  PerfEventAttr attr;
  attr.type = a.u32();
  attr.size = a.u32();
  attr.config = a.u64();
  attr.sample_period = a.u64();
  attr.sample_type = a.u64();
  attr.read_format = a.u64();
  attr.flags = a.u64();
  // perf keeps the bytes of the bitfield word in place and only bit-reverses each byte (the
  // u64 read above swapped them, so undo that first).
  if (a.swapped()) attr.flags = reverse_bits_in_bytes(ByteReader::byteswap(attr.flags));
  attr.wakeup_events = a.u32();
  attr.bp_type = a.u32();
  attr.config1 = a.u64();
  // Fields after the first 64 bytes exist only in larger attrs.
  if (size >= kAttrSizeVer1) attr.config2 = a.u64();
  if (size >= kAttrSizeVer2) attr.branch_sample_type = a.u64();
  if (size >= kAttrSizeVer3) {
    attr.sample_regs_user = a.u64();
    attr.sample_stack_user = a.u32();
    attr.clockid = a.s32();
  }
  if (size >= kAttrSizeVer4) attr.sample_regs_intr = a.u64();
  if (size >= kAttrSizeVer5) {
    attr.aux_watermark = a.u32();
    attr.sample_max_stack = a.u16();
    attr.reserved_2 = a.u16();
  }
  if (size >= kAttrSizeVer6) {
    attr.aux_sample_size = a.u32();
    attr.aux_action = a.u32();
  }
  if (size >= kAttrSizeVer7) attr.sig_data = a.u64();
  if (size >= kAttrSizeVer8) attr.config3 = a.u64();
  if (size >= kAttrSizeVer9) attr.config4 = a.u64();
  return attr;
}

namespace {

template <bool Swap>
void put(std::vector<uint8_t>& out, auto v) {
  if constexpr (Swap) v = ByteReader::byteswap(v);
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out.insert(out.end(), p, p + sizeof(v));
}

template <bool Swap>
void encode(const PerfEventAttr& attr, std::vector<uint8_t>& out) {
  uint32_t size = attr.size == 0 ? kAttrSizeVer0 : attr.size;
  size_t start = out.size();
  put<Swap>(out, attr.type);
  put<Swap>(out, attr.size);
  put<Swap>(out, attr.config);
  put<Swap>(out, attr.sample_period);
  put<Swap>(out, attr.sample_type);
  put<Swap>(out, attr.read_format);
  // Bitfield bytes stay in place across byte orders, each one bit-reversed (as perf swaps them).
  put<Swap>(out, Swap ? ByteReader::byteswap(reverse_bits_in_bytes(attr.flags)) : attr.flags);
  put<Swap>(out, attr.wakeup_events);
  put<Swap>(out, attr.bp_type);
  put<Swap>(out, attr.config1);
  put<Swap>(out, attr.config2);
  put<Swap>(out, attr.branch_sample_type);
  put<Swap>(out, attr.sample_regs_user);
  put<Swap>(out, attr.sample_stack_user);
  put<Swap>(out, attr.clockid);
  put<Swap>(out, attr.sample_regs_intr);
  put<Swap>(out, attr.aux_watermark);
  put<Swap>(out, attr.sample_max_stack);
  put<Swap>(out, attr.reserved_2);
  put<Swap>(out, attr.aux_sample_size);
  put<Swap>(out, attr.aux_action);
  put<Swap>(out, attr.sig_data);
  put<Swap>(out, attr.config3);
  put<Swap>(out, attr.config4);
  out.resize(start + size, 0);  // cut to the declared size, or zero-pad a larger one
}

}  // namespace

void encode_attr(const PerfEventAttr& attr, std::vector<uint8_t>& out) { encode<false>(attr, out); }
void encode_attr_swapped(const PerfEventAttr& attr, std::vector<uint8_t>& out) { encode<true>(attr, out); }

unsigned sample_id_trailer_size(const PerfEventAttr& attr) {
  if (!attr.sample_id_all()) return 0;
  uint64_t bits = attr.sample_type & (kSampleTid | kSampleTime | kSampleId | kSampleStreamId | kSampleCpu |
                                      kSampleIdentifier);
  return 8 * static_cast<unsigned>(std::popcount(bits));
}

std::string default_event_name(const PerfEventAttr& attr) {
  static const char* const kHw[] = {"cycles",          "instructions",         "cache-references",
                                    "cache-misses",    "branches",             "branch-misses",
                                    "bus-cycles",      "stalled-cycles-frontend", "stalled-cycles-backend",
                                    "ref-cycles"};
  static const char* const kSw[] = {"cpu-clock",        "task-clock",       "page-faults",
                                    "context-switches", "cpu-migrations",   "minor-faults",
                                    "major-faults",     "alignment-faults", "emulation-faults",
                                    "dummy",            "bpf-output",       "cgroup-switches"};
  uint64_t cfg = attr.config & 0xffffffffULL;
  switch (attr.type) {
    case kTypeHardware:
      if (cfg < std::size(kHw)) return kHw[cfg];
      break;
    case kTypeSoftware:
      if (cfg < std::size(kSw)) return kSw[cfg];
      break;
    case kTypeTracepoint:
      return fmt::format("tracepoint:{}", attr.config);
    case kTypeRaw:
      return fmt::format("raw 0x{:x}", attr.config);
    default:
      break;
  }
  return fmt::format("unknown attr type: {}, config: {:#x}", attr.type, attr.config);
}

}  // namespace tperf::perfdata
