// PERF_RECORD_SAMPLE bodies and the sample_id trailer of other records, decoded field by field
// in kernel order for every sample_type bit.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "perfdata/attr.h"
#include "perfdata/byte_reader.h"

namespace tperf::perfdata {

struct BranchEntry {
  uint64_t from = 0;
  uint64_t to = 0;
  uint64_t flags = 0;  // mispred:1 predicted:1 in_tx:1 abort:1 cycles:16 type:4 spec:2 new_type:4 priv:3
};

// A branch entry's flags word is C bitfields: a machine of the other byte order lays them out
// from the top bit down (mispred is bit 63 of the byte-swapped word). These move the fields
// between that layout and the host's as perf 6.1 does when it reads such a file (mispred to
// type; the bits after type go as one block, see sample.cc).
uint64_t branch_flags_from_foreign(uint64_t swapped_word);
uint64_t branch_flags_to_foreign(uint64_t flags);

struct ReadValue {
  uint64_t value = 0;
  uint64_t id = 0;
  uint64_t lost = 0;
};

struct ReadData {
  uint64_t time_enabled = 0;
  uint64_t time_running = 0;
  std::vector<ReadValue> values;  // one entry unless read_format has GROUP
};

struct RegsDump {
  uint64_t abi = 0;  // 0 none, 1 32-bit, 2 64-bit
  uint64_t mask = 0;
  std::vector<uint64_t> regs;  // one per set bit of mask, ascending bit order; empty if abi == 0
};

// Fields of a sample (or of a sample_id trailer) in host order. Fields absent from
// sample_type stay zero/empty; `present` says which were there (the sample_type used). Code that
// sets a field of a Sample it decodes into later sets the field's bit in `present` too: clear()
// resets the fields of `present`'s bits (and the small ones at the start).
struct Sample {
  uint64_t present = 0;
  uint64_t identifier = 0;
  uint64_t ip = 0;
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t time = 0;
  uint64_t addr = 0;
  uint64_t id = 0;
  uint64_t stream_id = 0;
  uint32_t cpu = 0;
  uint32_t cpu_res = 0;
  uint64_t period = 0;
  ReadData read;
  std::vector<uint64_t> callchain;  // ips including context markers
  // SampleParts::kChainInPlace: the callchain's entries where they are in the record (callchain
  // is then empty); chain() is the one to read.
  std::span<const uint64_t> chain_in_place;
  std::span<const uint8_t> raw;    // points into the record
  uint64_t branch_hw_idx = 0;
  bool branch_has_hw_idx = false;
  std::vector<BranchEntry> branches;
  std::vector<uint64_t> branch_counters;
  RegsDump regs_user;
  std::span<const uint8_t> stack_user;  // the whole copied stack area (points into the record)
  uint64_t stack_user_size = 0;         // bytes reserved (size field)
  uint64_t stack_dyn_size = 0;          // valid bytes (dyn_size)
  uint64_t weight = 0;                  // WEIGHT, or WEIGHT_STRUCT's raw u64
  uint64_t data_src = 0;
  uint64_t transaction = 0;
  RegsDump regs_intr;
  uint64_t phys_addr = 0;
  uint64_t cgroup = 0;
  uint64_t data_page_size = 0;
  uint64_t code_page_size = 0;
  std::span<const uint8_t> aux;

  // Deferred user callchain request (kernel 6.19+): callchain ends [.., USER_DEFERRED, cookie].
  bool deferred_callchain = false;
  uint64_t deferred_cookie = 0;

  void clear();
  bool has(uint64_t bits) const { return (present & bits) != 0; }
  // The callchain's entries, wherever decode_sample() left them.
  std::span<const uint64_t> chain() const { return chain_in_place.data() ? chain_in_place : std::span<const uint64_t>(callchain); }
};

// What decode_sample() reads: everything, or everything but the callchain's entries, which are
// only checked against the record's length (Sample::callchain is left empty, deferred_callchain
// false). A first pass that needs the other fields and the verdict on the record reads the
// chain's cache lines not at all.
// kChainInPlace: everything, but the callchain's entries are left in the record when the file is
// in this machine's byte order and they are aligned there (Sample::chain_in_place, valid while the
// record's bytes are); copied as by kAll otherwise. A caller that only compares a chain with the
// ones it has seen saves the copy.
enum class SampleParts { kAll, kWithoutCallchain, kChainInPlace };

// Decodes a SAMPLE body (the bytes after the 8-byte header) for `attr`. The record's file
// offset is used for errors. Throws FormatError when the body is shorter than its fields say
// (whatever `parts` says).
// Returns the number of body bytes left unconsumed (non-zero means trailing padding/garbage).
size_t decode_sample(std::span<const uint8_t> body, bool swap, uint64_t body_offset, const PerfEventAttr& attr,
                     Sample& out, SampleParts parts = SampleParts::kAll);

// Decodes the sample_id trailer at the end of a non-sample kernel record body. `body` is the
// whole body; the trailer is its last sample_id_trailer_size(attr) bytes. Throws when the body
// is too short for it.
void decode_sample_id(std::span<const uint8_t> body, bool swap, uint64_t body_offset, const PerfEventAttr& attr,
                      Sample& out);

// Where an event id sits, for finding the attr of a record when a file has several events.
// Returns -1 when the sample_type has neither IDENTIFIER nor ID.
int sample_id_position(uint64_t sample_type);      // u64 index from the start of a SAMPLE body
int trailer_id_position(uint64_t sample_type);     // u64 index counted back from the end (1 = last)

}  // namespace tperf::perfdata
