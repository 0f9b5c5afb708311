// perf_event_attr in host order, decoded from any of its historical sizes, and encoded back.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "perfdata/abi.h"
#include "perfdata/byte_reader.h"

namespace tperf::perfdata {

struct PerfEventAttr {
  uint32_t type = 0;
  uint32_t size = 0;  // as found in the file (0 is read as 64)
  uint64_t config = 0;
  uint64_t sample_period = 0;  // or sample_freq when freq is set
  uint64_t sample_type = 0;
  uint64_t read_format = 0;
  uint64_t flags = 0;
  uint32_t wakeup_events = 0;
  uint32_t bp_type = 0;
  uint64_t config1 = 0;
  uint64_t config2 = 0;
  uint64_t branch_sample_type = 0;
  uint64_t sample_regs_user = 0;
  uint32_t sample_stack_user = 0;
  int32_t clockid = 0;
  uint64_t sample_regs_intr = 0;
  uint32_t aux_watermark = 0;
  uint16_t sample_max_stack = 0;
  uint16_t reserved_2 = 0;
  uint32_t aux_sample_size = 0;
  uint32_t aux_action = 0;
  uint64_t sig_data = 0;
  uint64_t config3 = 0;
  uint64_t config4 = 0;

  bool flag(AttrFlagBit bit) const { return (flags >> bit) & 1; }
  void set_flag(AttrFlagBit bit, bool on = true) {
    if (on)
      flags |= 1ULL << bit;
    else
      flags &= ~(1ULL << bit);
  }
  unsigned precise_ip() const { return (flags >> kFlagPreciseIp0) & 3; }
  bool sample_id_all() const { return flag(kFlagSampleIdAll); }
  bool freq() const { return flag(kFlagFreq); }
  bool has(uint64_t sample_bits) const { return (sample_type & sample_bits) != 0; }
};

// Decodes an attr of `size` bytes (0 means 64; must be >= 64). Bytes beyond what tperf knows are
// skipped; missing trailing fields stay zero. Foreign-endian flags words keep their byte order
// and get each byte bit-reversed (as perf does), as C bitfields are laid out from the other end.
PerfEventAttr decode_attr(ByteReader& r, uint32_t size);

// Reads the attr's own size field (at offset 4) without consuming anything.
uint32_t peek_attr_size(const ByteReader& r);

// Encodes in host order with attr.size bytes (0 -> 64, values above kAttrSizeMax are
// padded with zeros).
void encode_attr(const PerfEventAttr& attr, std::vector<uint8_t>& out);
// Encodes in the opposite byte order (used to make foreign-endian test files).
void encode_attr_swapped(const PerfEventAttr& attr, std::vector<uint8_t>& out);

// Bit-reverses each byte of a u64 (the fix-up for foreign-endian attr flags words).
uint64_t reverse_bits_in_bytes(uint64_t v);

// The name perf gives an event with no event_desc: "cpu-clock", "cycles", "sched:..." is not
// knowable without tracefs, so tracepoints come back as "tracepoint:<id>".
std::string default_event_name(const PerfEventAttr& attr);

// Size of the sample_id trailer appended to non-sample records of this attr.
unsigned sample_id_trailer_size(const PerfEventAttr& attr);

}  // namespace tperf::perfdata
