// Builds complete perf.data records (header, body and, for kernel types, the sample_id trailer)
// and feature payloads as byte vectors in either byte order: the encoding side of the format
// (the record structs and their decoders are in records.h), used by the Writer, the recorder
// and tests that craft synthetic perf.data files.
//
//   RecordBuilder rb(attr);  // the attr decides the SAMPLE layout and the sample_id trailer
//   w.write_record(rb.comm({.pid = 42, .tid = 42, .comm = "app", .exec = true},
//                          {.pid = 42, .tid = 42, .time = 10}));  // the sample_id trailer
//   w.write_record(rb.mmap2({.pid = 42, .tid = 42, .addr = 0x400000, .len = 0x1000, .filename = "/bin/app"}));
//   Sample s; s.ip = 0x400123; s.pid = s.tid = 42; s.time = 20; s.callchain = {...};
//   w.write_record(rb.sample(s));
//
// Builders throw std::invalid_argument when the input cannot be encoded (a record above 65535
// bytes, register values that do not match the attr's register mask).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "perfdata/abi.h"
#include "perfdata/attr.h"
#include "perfdata/features.h"
#include "perfdata/records.h"
#include "perfdata/sample.h"

namespace tperf::perfdata {

// The event structs (MmapEvent, CommEvent, TaskEvent, ...) are shared with the decoders in records.h.

class RecordBuilder {
 public:
  // `attr` decides the SAMPLE layout (sample_type, read_format, branch_sample_type, register
  // masks) and whether kernel records get a sample_id trailer (sample_id_all). swap = build
  // records in the foreign byte order.
  explicit RecordBuilder(const PerfEventAttr& attr = {}, bool swap = false) : attr_(attr), swap_(swap) {}

  const PerfEventAttr& attr() const { return attr_; }
  bool swapped() const { return swap_; }

  // --- Kernel records (sample_id trailer iff attr.sample_id_all) ---
  std::vector<uint8_t> mmap(const MmapEvent& e, const SampleId& sid = {}) const;
  std::vector<uint8_t> mmap2(const Mmap2Event& e, const SampleId& sid = {}) const;
  std::vector<uint8_t> comm(const CommEvent& e, const SampleId& sid = {}) const;
  std::vector<uint8_t> fork(const TaskEvent& e, const SampleId& sid = {}) const;
  std::vector<uint8_t> exit(const TaskEvent& e, const SampleId& sid = {}) const;
  std::vector<uint8_t> lost(uint64_t id, uint64_t lost, const SampleId& sid = {}) const;
  std::vector<uint8_t> lost(const LostEvent& e, const SampleId& sid = {}) const { return lost(e.id, e.lost, sid); }
  std::vector<uint8_t> throttle(const ThrottleEvent& e, const SampleId& sid = {}) const;
  std::vector<uint8_t> unthrottle(const ThrottleEvent& e, const SampleId& sid = {}) const;
  std::vector<uint8_t> read(const ReadEvent& e, const SampleId& sid = {}) const;
  // Every field of sample_type in kernel order; `s.present` is ignored. RAW data is zero-padded
  // so that 4 + size is a multiple of 8, AUX data to a multiple of 8 (as the kernel does);
  // STACK_USER writes max(stack_user_size, stack_user.size()) bytes and dyn_size iff that is
  // non-zero; REGS_* write popcount(mask) registers unless abi is 0.
  std::vector<uint8_t> sample(const Sample& s, uint16_t misc = kMiscUser) const;
  std::vector<uint8_t> aux(const AuxEvent& e, const SampleId& sid = {}) const;
  std::vector<uint8_t> itrace_start(int32_t pid, int32_t tid, const SampleId& sid = {}) const;
  std::vector<uint8_t> lost_samples(uint64_t lost, const SampleId& sid = {}, uint16_t misc = 0) const;
  std::vector<uint8_t> switch_event(bool out, bool preempt = false, const SampleId& sid = {}) const;
  std::vector<uint8_t> switch_cpu_wide(const SwitchCpuWideEvent& e, const SampleId& sid = {}) const;
  std::vector<uint8_t> namespaces(const NamespacesEvent& e, const SampleId& sid = {}) const;
  std::vector<uint8_t> ksymbol(const KsymbolEvent& e, const SampleId& sid = {}) const;
  std::vector<uint8_t> bpf_event(const BpfEvent& e, const SampleId& sid = {}) const;
  std::vector<uint8_t> cgroup(const CgroupEvent& e, const SampleId& sid = {}) const;
  std::vector<uint8_t> text_poke(const TextPokeEvent& e, const SampleId& sid = {}) const;
  std::vector<uint8_t> aux_output_hw_id(uint64_t hw_id, const SampleId& sid = {}) const;
  std::vector<uint8_t> callchain_deferred(const CallchainDeferredEvent& e, const SampleId& sid = {}) const;

  // --- perf tool records (never a trailer) ---
  std::vector<uint8_t> finished_round() const { return record(kRecordFinishedRound, 0, {}); }
  std::vector<uint8_t> finished_init() const { return record(kRecordFinishedInit, 0, {}); }
  std::vector<uint8_t> id_index(std::span<const IdIndexEntry> entries) const;
  std::vector<uint8_t> thread_map(std::span<const ThreadMapEntry> threads) const;
  // CPU_MAP as a list of CPUs (type 0) or as a range (type 2, what perf 6.1 writes for "0-N").
  std::vector<uint8_t> cpu_map(std::span<const uint16_t> cpus) const;
  std::vector<uint8_t> cpu_map_range(uint16_t start, uint16_t end, bool any_cpu = false) const;
  std::vector<uint8_t> time_conv(const TimeConv& tc) const;
  // HEADER_ATTR (pipe mode): attr.size bytes of attr then the ids. attr.size 0 is written as 64.
  std::vector<uint8_t> header_attr(const PerfEventAttr& attr, std::span<const uint64_t> ids) const;
  // HEADER_FEATURE (pipe mode): feat_id then the payload, size not padded (as perf writes it).
  std::vector<uint8_t> header_feature(uint64_t feat_id, std::span<const uint8_t> payload = {}) const;
  std::vector<uint8_t> event_update(uint64_t type, uint64_t id, std::span<const uint8_t> data) const;
  std::vector<uint8_t> event_update_name(uint64_t id, std::string_view name) const;
  // HEADER_BUILD_ID (67): the same layout as an entry of the BUILD_ID feature.
  std::vector<uint8_t> header_build_id(const BuildIdEntry& e) const;
  // COMPRESSED (81): the zstd bytes, size not padded. COMPRESSED2 (83): u64 data_size, the
  // bytes, padded to 8.
  std::vector<uint8_t> compressed(std::span<const uint8_t> zstd_bytes) const;
  std::vector<uint8_t> compressed2(std::span<const uint8_t> zstd_bytes) const;

  // Any record: header + body (+ the sample_id trailer for kernel types other than SAMPLE when
  // the attr has sample_id_all). For crafting records the typed builders do not cover.
  std::vector<uint8_t> record(uint32_t type, uint16_t misc, std::span<const uint8_t> body,
                              const SampleId& sid = {}) const;

  // The sample_id trailer alone (empty without sample_id_all).
  std::vector<uint8_t> sample_id(const SampleId& sid) const;

 private:
  std::vector<uint8_t> task(uint32_t type, const TaskEvent& e, const SampleId& sid) const;
  std::vector<uint8_t> throttle_record(uint32_t type, const ThrottleEvent& e, const SampleId& sid) const;

  PerfEventAttr attr_;
  bool swap_;
};

// Writes a perf_event_header {u32 type, u16 misc, u16 size}; throws std::invalid_argument if
// size > 65535.
void put_record_header(std::vector<uint8_t>& out, uint32_t type, uint16_t misc, size_t size, bool swap);

// --- Feature payloads (the bytes of one feature section, as perf 6.1 writes them) ---

// perf_header_string: u32 len, the string NUL-padded to a multiple of 64 (len counts the padding).
void put_header_string(std::vector<uint8_t>& out, std::string_view s, bool swap);
std::vector<uint8_t> feature_string(std::string_view s, bool swap = false);  // HOSTNAME, OSRELEASE, ...
std::vector<uint8_t> feature_string_list(std::span<const std::string> list, bool swap = false);  // CMDLINE
std::vector<uint8_t> feature_nrcpus(uint32_t available, uint32_t online, bool swap = false);
std::vector<uint8_t> feature_u64(uint64_t value, bool swap = false);  // TOTAL_MEM, CLOCKID, DIR_FORMAT
std::vector<uint8_t> feature_sample_time(uint64_t first, uint64_t last, bool swap = false);
std::vector<uint8_t> feature_clock_data(const ClockData& cd, bool swap = false);
std::vector<uint8_t> feature_compressed(const CompressedInfo& ci, bool swap = false);
// EVENT_DESC: u32 nr, u32 attr_size, then per event the attr, u32 nr_ids, name, ids. All attrs
// are written with the size of the first one.
std::vector<uint8_t> feature_event_desc(std::span<const EventDescEntry> events, bool swap = false);
// BUILD_ID: one entry per DSO, header type 0, filename padded to 64 (entries are not 8-aligned).
std::vector<uint8_t> feature_build_ids(std::span<const BuildIdEntry> entries, bool swap = false);
// CPU_TOPOLOGY as perf 6.1 writes it: core and thread sibling lists, {core_id, socket_id} per
// CPU, then (when has_die) die sibling lists and a die_id per CPU.
std::vector<uint8_t> feature_cpu_topology(const CpuTopology& topology, bool swap = false);
// NUMA_TOPOLOGY: u32 nr, then per node {u32 node, u64 mem_total kB, u64 mem_free kB, cpu list}.
std::vector<uint8_t> feature_numa_topology(std::span<const NumaNode> nodes, bool swap = false);
// PMU_MAPPINGS: u32 nr, then {u32 type, name} per PMU.
std::vector<uint8_t> feature_pmu_mappings(std::span<const std::pair<uint32_t, std::string>> pmus, bool swap = false);
// CACHE (version 1): u32 nr, then {level, line_size, sets, ways, type, size, map} per cache.
std::vector<uint8_t> feature_cache(std::span<const CacheLevel> caches, bool swap = false);
// MEM_TOPOLOGY (version 1): block size, then per node {node, size in blocks, bitmap of blocks}.
std::vector<uint8_t> feature_mem_topology(const MemTopology& topology, bool swap = false);

}  // namespace tperf::perfdata
