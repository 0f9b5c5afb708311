#include "perfdata/record_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <stdexcept>

#include "perfdata/byte_writer.h"

namespace tperf::perfdata {

namespace {

constexpr uint64_t kTrailerBits =
    kSampleTid | kSampleTime | kSampleId | kSampleStreamId | kSampleCpu | kSampleIdentifier;
constexpr size_t kBuildIdMax = 20;
constexpr size_t kNameAlign = 64;  // perf's NAME_ALIGN for header strings and build-id filenames

void put_trailer(ByteWriter& w, uint64_t t, const SampleId& sid) {
  if (t & kSampleTid) w.u32(sid.pid).u32(sid.tid);
  if (t & kSampleTime) w.u64(sid.time);
  if (t & kSampleId) w.u64(sid.id);
  if (t & kSampleStreamId) w.u64(sid.stream_id);
  if (t & kSampleCpu) w.u32(sid.cpu).u32(0);
  if (t & kSampleIdentifier) w.u64(sid.id);
}

void put_read(ByteWriter& w, uint64_t read_format, const ReadData& rd) {
  if (read_format & kReadGroup) {
    w.u64(rd.values.size());
    if (read_format & kReadTotalTimeEnabled) w.u64(rd.time_enabled);
    if (read_format & kReadTotalTimeRunning) w.u64(rd.time_running);
    for (const auto& v : rd.values) {
      w.u64(v.value);
      if (read_format & kReadId) w.u64(v.id);
      if (read_format & kReadLost) w.u64(v.lost);
    }
  } else {
    ReadValue v = rd.values.empty() ? ReadValue{} : rd.values.front();
    if (rd.values.size() > 1) throw std::invalid_argument("read_format without GROUP holds one value");
    w.u64(v.value);
    if (read_format & kReadTotalTimeEnabled) w.u64(rd.time_enabled);
    if (read_format & kReadTotalTimeRunning) w.u64(rd.time_running);
    if (read_format & kReadId) w.u64(v.id);
    if (read_format & kReadLost) w.u64(v.lost);
  }
}

void put_regs(ByteWriter& w, uint64_t mask, const RegsDump& regs, const char* what) {
  w.u64(regs.abi);
  if (regs.abi == 0) return;
  size_t n = static_cast<size_t>(std::popcount(mask));
  if (regs.regs.size() != n) {
    throw std::invalid_argument(
        fmt::format("{}: {} register values for a mask with {} bits set", what, regs.regs.size(), n));
  }
  w.u64s(regs.regs);
}

void put_build_id_entry(std::vector<uint8_t>& out, uint32_t type, const BuildIdEntry& e, bool swap) {
  if (e.build_id.size() > kBuildIdMax) {
    throw std::invalid_argument(fmt::format("build id of {} bytes (at most 20)", e.build_id.size()));
  }
  size_t start = out.size();
  put_record_header(out, type, static_cast<uint16_t>(e.misc | kMiscBuildIdSize), 0, swap);
  ByteWriter w(out, swap);
  w.s32(e.pid).bytes(e.build_id).zeros(kBuildIdMax - e.build_id.size());
  w.u8(static_cast<uint8_t>(e.build_id.size())).zeros(3);
  w.padded_string(e.filename, kNameAlign);
  size_t size = out.size() - start;
  if (size > kMaxRecordSize) throw std::invalid_argument("build id record above 65535 bytes");
  w.patch_u16(start + 6, static_cast<uint16_t>(size));
}

}  // namespace

void put_record_header(std::vector<uint8_t>& out, uint32_t type, uint16_t misc, size_t size, bool swap) {
  if (size > kMaxRecordSize) {
    throw std::invalid_argument(fmt::format("record of type {} would be {} bytes (at most 65535)", type, size));
  }
  ByteWriter(out, swap).u32(type).u16(misc).u16(static_cast<uint16_t>(size));
}

std::vector<uint8_t> RecordBuilder::record(uint32_t type, uint16_t misc, std::span<const uint8_t> body,
                                           const SampleId& sid) const {
  bool trailer = type < kRecordHeaderAttr && type != kRecordSample && attr_.sample_id_all();
  size_t trailer_size = trailer ? sample_id_trailer_size(attr_) : 0;
  std::vector<uint8_t> out;
  out.reserve(8 + body.size() + trailer_size);
  put_record_header(out, type, misc, 8 + body.size() + trailer_size, swap_);
  out.insert(out.end(), body.begin(), body.end());
  if (trailer) {
    ByteWriter w(out, swap_);
    put_trailer(w, attr_.sample_type, sid);
  }
  return out;
}

std::vector<uint8_t> RecordBuilder::sample_id(const SampleId& sid) const {
  std::vector<uint8_t> out;
  if (!attr_.sample_id_all()) return out;
  ByteWriter w(out, swap_);
  put_trailer(w, attr_.sample_type & kTrailerBits, sid);
  return out;
}

std::vector<uint8_t> RecordBuilder::mmap(const MmapEvent& e, const SampleId& sid) const {
  std::vector<uint8_t> body;
  ByteWriter(body, swap_).s32(e.pid).s32(e.tid).u64(e.addr).u64(e.len).u64(e.pgoff).padded_string(e.filename);
  return record(kRecordMmap, e.misc, body, sid);
}

std::vector<uint8_t> RecordBuilder::mmap2(const Mmap2Event& e, const SampleId& sid) const {
  std::vector<uint8_t> body;
  ByteWriter w(body, swap_);
  uint16_t misc = e.misc;
  w.s32(e.pid).s32(e.tid).u64(e.addr).u64(e.len).u64(e.pgoff);
  if (!e.build_id.empty() || (misc & kMiscMmapBuildId)) {
    if (e.build_id.size() > kBuildIdMax) {
      throw std::invalid_argument(fmt::format("build id of {} bytes (at most 20)", e.build_id.size()));
    }
    misc |= kMiscMmapBuildId;
    w.u8(static_cast<uint8_t>(e.build_id.size())).u8(0).u16(0);
    w.bytes(e.build_id).zeros(kBuildIdMax - e.build_id.size());
  } else {
    w.u32(e.maj).u32(e.min).u64(e.ino).u64(e.ino_generation);
  }
  w.u32(e.prot).u32(e.flags).padded_string(e.filename);
  return record(kRecordMmap2, misc, body, sid);
}

std::vector<uint8_t> RecordBuilder::comm(const CommEvent& e, const SampleId& sid) const {
  std::vector<uint8_t> body;
  ByteWriter(body, swap_).s32(e.pid).s32(e.tid).padded_string(e.comm);
  return record(kRecordComm, static_cast<uint16_t>(e.misc | (e.exec ? kMiscCommExec : 0)), body, sid);
}

std::vector<uint8_t> RecordBuilder::task(uint32_t type, const TaskEvent& e, const SampleId& sid) const {
  std::vector<uint8_t> body;
  ByteWriter(body, swap_).s32(e.pid).s32(e.ppid).s32(e.tid).s32(e.ptid).u64(e.time);
  return record(type, e.misc, body, sid);
}

std::vector<uint8_t> RecordBuilder::fork(const TaskEvent& e, const SampleId& sid) const {
  return task(kRecordFork, e, sid);
}

std::vector<uint8_t> RecordBuilder::exit(const TaskEvent& e, const SampleId& sid) const {
  return task(kRecordExit, e, sid);
}

std::vector<uint8_t> RecordBuilder::lost(uint64_t id, uint64_t lost, const SampleId& sid) const {
  std::vector<uint8_t> body;
  ByteWriter(body, swap_).u64(id).u64(lost);
  return record(kRecordLost, 0, body, sid);
}

std::vector<uint8_t> RecordBuilder::throttle_record(uint32_t type, const ThrottleEvent& e, const SampleId& sid) const {
  std::vector<uint8_t> body;
  ByteWriter(body, swap_).u64(e.time).u64(e.id).u64(e.stream_id);
  return record(type, 0, body, sid);
}

std::vector<uint8_t> RecordBuilder::throttle(const ThrottleEvent& e, const SampleId& sid) const {
  return throttle_record(kRecordThrottle, e, sid);
}

std::vector<uint8_t> RecordBuilder::unthrottle(const ThrottleEvent& e, const SampleId& sid) const {
  return throttle_record(kRecordUnthrottle, e, sid);
}

std::vector<uint8_t> RecordBuilder::read(const ReadEvent& e, const SampleId& sid) const {
  std::vector<uint8_t> body;
  ByteWriter w(body, swap_);
  w.s32(e.pid).s32(e.tid);
  put_read(w, attr_.read_format, e.values);
  return record(kRecordRead, 0, body, sid);
}

std::vector<uint8_t> RecordBuilder::sample(const Sample& s, uint16_t misc) const {
  const uint64_t t = attr_.sample_type;
  std::vector<uint8_t> out;
  put_record_header(out, kRecordSample, misc, 0, swap_);
  ByteWriter w(out, swap_);
  if (t & kSampleIdentifier) w.u64(s.identifier);
  if (t & kSampleIp) w.u64(s.ip);
  if (t & kSampleTid) w.u32(s.pid).u32(s.tid);
  if (t & kSampleTime) w.u64(s.time);
  if (t & kSampleAddr) w.u64(s.addr);
  if (t & kSampleId) w.u64(s.id);
  if (t & kSampleStreamId) w.u64(s.stream_id);
  if (t & kSampleCpu) w.u32(s.cpu).u32(s.cpu_res);
  if (t & kSamplePeriod) w.u64(s.period);
  if (t & kSampleRead) put_read(w, attr_.read_format, s.read);
  if (t & kSampleCallchain) w.u64(s.callchain.size()).u64s(s.callchain);
  if (t & kSampleRaw) {
    // The kernel pads raw data so that the u32 size plus the data keep the record 8-aligned.
    size_t size = static_cast<size_t>(align_up(4 + s.raw.size(), 8) - 4);
    w.u32(static_cast<uint32_t>(size)).bytes(s.raw).zeros(size - s.raw.size());
  }
  if (t & kSampleBranchStack) {
    w.u64(s.branches.size());
    if (attr_.branch_sample_type & kBranchHwIndex) w.u64(s.branch_hw_idx);
    for (const auto& b : s.branches) w.u64(b.from).u64(b.to).u64(swap_ ? branch_flags_to_foreign(b.flags) : b.flags);
    if (attr_.branch_sample_type & kBranchCounters) {
      if (s.branch_counters.size() > s.branches.size()) {
        throw std::invalid_argument("more branch counters than branches");
      }
      w.u64s(s.branch_counters).zeros(8 * (s.branches.size() - s.branch_counters.size()));
    }
  }
  if (t & kSampleRegsUser) put_regs(w, attr_.sample_regs_user, s.regs_user, "user regs");
  if (t & kSampleStackUser) {
    uint64_t size = std::max<uint64_t>(s.stack_user_size, s.stack_user.size());
    w.u64(size).bytes(s.stack_user).zeros(static_cast<size_t>(size - s.stack_user.size()));
    if (size != 0) w.u64(s.stack_dyn_size);
  }
  if (t & (kSampleWeight | kSampleWeightStruct)) w.u64(s.weight);
  if (t & kSampleDataSrc) w.u64(s.data_src);
  if (t & kSampleTransaction) w.u64(s.transaction);
  if (t & kSampleRegsIntr) put_regs(w, attr_.sample_regs_intr, s.regs_intr, "intr regs");
  if (t & kSamplePhysAddr) w.u64(s.phys_addr);
  if (t & kSampleCgroup) w.u64(s.cgroup);
  if (t & kSampleDataPageSize) w.u64(s.data_page_size);
  if (t & kSampleCodePageSize) w.u64(s.code_page_size);
  if (t & kSampleAux) {
    size_t size = static_cast<size_t>(align_up(s.aux.size(), 8));
    w.u64(size).bytes(s.aux).zeros(size - s.aux.size());
  }
  if (out.size() > kMaxRecordSize) {
    throw std::invalid_argument(fmt::format("sample would be {} bytes (at most 65535)", out.size()));
  }
  w.patch_u16(6, static_cast<uint16_t>(out.size()));
  return out;
}

std::vector<uint8_t> RecordBuilder::aux(const AuxEvent& e, const SampleId& sid) const {
  std::vector<uint8_t> body;
  ByteWriter(body, swap_).u64(e.aux_offset).u64(e.aux_size).u64(e.flags);
  return record(kRecordAux, 0, body, sid);
}

std::vector<uint8_t> RecordBuilder::itrace_start(int32_t pid, int32_t tid, const SampleId& sid) const {
  std::vector<uint8_t> body;
  ByteWriter(body, swap_).s32(pid).s32(tid);
  return record(kRecordItraceStart, 0, body, sid);
}

std::vector<uint8_t> RecordBuilder::lost_samples(uint64_t lost, const SampleId& sid, uint16_t misc) const {
  std::vector<uint8_t> body;
  ByteWriter(body, swap_).u64(lost);
  return record(kRecordLostSamples, misc, body, sid);
}

std::vector<uint8_t> RecordBuilder::switch_event(bool out, bool preempt, const SampleId& sid) const {
  uint16_t misc = static_cast<uint16_t>((out ? kMiscSwitchOut : 0) | (preempt ? kMiscSwitchOutPreempt : 0));
  return record(kRecordSwitch, misc, {}, sid);
}

std::vector<uint8_t> RecordBuilder::switch_cpu_wide(const SwitchCpuWideEvent& e, const SampleId& sid) const {
  std::vector<uint8_t> body;
  ByteWriter(body, swap_).s32(e.next_prev_pid).s32(e.next_prev_tid);
  uint16_t misc = static_cast<uint16_t>((e.out ? kMiscSwitchOut : 0) | (e.preempt ? kMiscSwitchOutPreempt : 0));
  return record(kRecordSwitchCpuWide, misc, body, sid);
}

std::vector<uint8_t> RecordBuilder::namespaces(const NamespacesEvent& e, const SampleId& sid) const {
  std::vector<uint8_t> body;
  ByteWriter w(body, swap_);
  w.s32(e.pid).s32(e.tid).u64(e.namespaces.size());
  for (const auto& ns : e.namespaces) w.u64(ns.dev).u64(ns.ino);
  return record(kRecordNamespaces, 0, body, sid);
}

std::vector<uint8_t> RecordBuilder::ksymbol(const KsymbolEvent& e, const SampleId& sid) const {
  std::vector<uint8_t> body;
  ByteWriter(body, swap_).u64(e.addr).u32(e.len).u16(e.ksym_type).u16(e.flags).padded_string(e.name);
  return record(kRecordKsymbol, e.misc, body, sid);
}

std::vector<uint8_t> RecordBuilder::bpf_event(const BpfEvent& e, const SampleId& sid) const {
  std::vector<uint8_t> body;
  ByteWriter(body, swap_).u16(e.type).u16(e.flags).u32(e.id).bytes(e.tag);
  return record(kRecordBpfEvent, e.misc, body, sid);
}

std::vector<uint8_t> RecordBuilder::cgroup(const CgroupEvent& e, const SampleId& sid) const {
  std::vector<uint8_t> body;
  ByteWriter(body, swap_).u64(e.id).padded_string(e.path);
  return record(kRecordCgroup, 0, body, sid);
}

std::vector<uint8_t> RecordBuilder::text_poke(const TextPokeEvent& e, const SampleId& sid) const {
  if (e.old_bytes.size() > 0xffff || e.new_bytes.size() > 0xffff) {
    throw std::invalid_argument("text_poke bytes longer than 65535");
  }
  std::vector<uint8_t> body;
  ByteWriter w(body, swap_);
  w.u64(e.addr).u16(static_cast<uint16_t>(e.old_bytes.size())).u16(static_cast<uint16_t>(e.new_bytes.size()));
  w.bytes(e.old_bytes).bytes(e.new_bytes).pad_to(8);
  return record(kRecordTextPoke, e.misc, body, sid);
}

std::vector<uint8_t> RecordBuilder::aux_output_hw_id(uint64_t hw_id, const SampleId& sid) const {
  std::vector<uint8_t> body;
  ByteWriter(body, swap_).u64(hw_id);
  return record(kRecordAuxOutputHwId, 0, body, sid);
}

std::vector<uint8_t> RecordBuilder::callchain_deferred(const CallchainDeferredEvent& e, const SampleId& sid) const {
  std::vector<uint8_t> body;
  ByteWriter(body, swap_).u64(e.cookie).u64(e.ips.size()).u64s(e.ips);
  return record(kRecordCallchainDeferred, e.misc, body, sid);
}

std::vector<uint8_t> RecordBuilder::id_index(std::span<const IdIndexEntry> entries) const {
  std::vector<uint8_t> body;
  ByteWriter w(body, swap_);
  w.u64(entries.size());
  for (const auto& e : entries) w.u64(e.id).u64(e.idx).s64(e.cpu).s64(e.tid);
  return record(kRecordIdIndex, 0, body);
}

std::vector<uint8_t> RecordBuilder::thread_map(std::span<const ThreadMapEntry> threads) const {
  std::vector<uint8_t> body;
  ByteWriter w(body, swap_);
  w.u64(threads.size());
  for (const auto& t : threads) w.s64(t.pid).fixed_string(t.comm, 16);
  return record(kRecordThreadMap, 0, body);
}

std::vector<uint8_t> RecordBuilder::cpu_map(std::span<const uint16_t> cpus) const {
  std::vector<uint8_t> body;
  ByteWriter w(body, swap_);
  w.u16(0).u16(static_cast<uint16_t>(cpus.size()));
  for (uint16_t c : cpus) w.u16(c);
  w.pad_to(8);
  return record(kRecordCpuMap, 0, body);
}

std::vector<uint8_t> RecordBuilder::cpu_map_range(uint16_t start, uint16_t end, bool any_cpu) const {
  std::vector<uint8_t> body;
  ByteWriter(body, swap_).u16(2).u8(any_cpu ? 1 : 0).u8(0).u16(start).u16(end);
  return record(kRecordCpuMap, 0, body);
}

std::vector<uint8_t> RecordBuilder::time_conv(const TimeConv& tc) const {
  std::vector<uint8_t> body;
  ByteWriter w(body, swap_);
  w.u64(tc.time_shift).u64(tc.time_mult).u64(tc.time_zero);
  if (tc.extended) {
    w.u64(tc.time_cycles).u64(tc.time_mask);
    w.u8(tc.cap_user_time_zero ? 1 : 0).u8(tc.cap_user_time_short ? 1 : 0).zeros(6);
  }
  return record(kRecordTimeConv, 0, body);
}

std::vector<uint8_t> RecordBuilder::header_attr(const PerfEventAttr& attr, std::span<const uint64_t> ids) const {
  std::vector<uint8_t> body;
  if (swap_)
    encode_attr_swapped(attr, body);
  else
    encode_attr(attr, body);
  ByteWriter(body, swap_).u64s(ids);
  return record(kRecordHeaderAttr, 0, body);
}

std::vector<uint8_t> RecordBuilder::header_feature(uint64_t feat_id, std::span<const uint8_t> payload) const {
  std::vector<uint8_t> body;
  ByteWriter(body, swap_).u64(feat_id).bytes(payload);
  return record(kRecordHeaderFeature, 0, body);
}

std::vector<uint8_t> RecordBuilder::event_update(uint64_t type, uint64_t id, std::span<const uint8_t> data) const {
  std::vector<uint8_t> body;
  ByteWriter(body, swap_).u64(type).u64(id).bytes(data);
  return record(kRecordEventUpdate, 0, body);
}

std::vector<uint8_t> RecordBuilder::event_update_name(uint64_t id, std::string_view name) const {
  std::vector<uint8_t> data;
  ByteWriter(data).padded_string(name);
  return event_update(kEventUpdateName, id, data);
}

std::vector<uint8_t> RecordBuilder::header_build_id(const BuildIdEntry& e) const {
  std::vector<uint8_t> out;
  put_build_id_entry(out, kRecordHeaderBuildId, e, swap_);
  return out;
}

std::vector<uint8_t> RecordBuilder::compressed(std::span<const uint8_t> zstd_bytes) const {
  return record(kRecordCompressed, 0, zstd_bytes);
}

std::vector<uint8_t> RecordBuilder::compressed2(std::span<const uint8_t> zstd_bytes) const {
  std::vector<uint8_t> body;
  ByteWriter(body, swap_).u64(zstd_bytes.size()).bytes(zstd_bytes).pad_to(8);
  return record(kRecordCompressed2, 0, body);
}

// --- Feature payloads ---

void put_header_string(std::vector<uint8_t>& out, std::string_view s, bool swap) {
  ByteWriter w(out, swap);
  w.u32(static_cast<uint32_t>(align_up(s.size() + 1, kNameAlign))).padded_string(s, kNameAlign);
}

std::vector<uint8_t> feature_string(std::string_view s, bool swap) {
  std::vector<uint8_t> out;
  put_header_string(out, s, swap);
  return out;
}

std::vector<uint8_t> feature_string_list(std::span<const std::string> list, bool swap) {
  std::vector<uint8_t> out;
  ByteWriter(out, swap).u32(static_cast<uint32_t>(list.size()));
  for (const auto& s : list) put_header_string(out, s, swap);
  return out;
}

std::vector<uint8_t> feature_nrcpus(uint32_t available, uint32_t online, bool swap) {
  std::vector<uint8_t> out;
  ByteWriter(out, swap).u32(available).u32(online);
  return out;
}

std::vector<uint8_t> feature_u64(uint64_t value, bool swap) {
  std::vector<uint8_t> out;
  ByteWriter(out, swap).u64(value);
  return out;
}

std::vector<uint8_t> feature_sample_time(uint64_t first, uint64_t last, bool swap) {
  std::vector<uint8_t> out;
  ByteWriter(out, swap).u64(first).u64(last);
  return out;
}

std::vector<uint8_t> feature_clock_data(const ClockData& cd, bool swap) {
  std::vector<uint8_t> out;
  ByteWriter(out, swap).u32(cd.version).u32(cd.clockid).u64(cd.wall_clock_ns).u64(cd.clockid_ns);
  return out;
}

std::vector<uint8_t> feature_compressed(const CompressedInfo& ci, bool swap) {
  std::vector<uint8_t> out;
  ByteWriter(out, swap).u32(ci.version).u32(ci.type).u32(ci.level).u32(ci.ratio).u32(ci.mmap_len);
  return out;
}

std::vector<uint8_t> feature_event_desc(std::span<const EventDescEntry> events, bool swap) {
  std::vector<uint8_t> out;
  ByteWriter w(out, swap);
  uint32_t attr_size = kAttrSizeVer0;
  if (!events.empty() && events.front().attr.size != 0) attr_size = events.front().attr.size;
  w.u32(static_cast<uint32_t>(events.size())).u32(attr_size);
  for (const auto& e : events) {
    PerfEventAttr a = e.attr;
    a.size = attr_size;
    if (swap)
      encode_attr_swapped(a, out);
    else
      encode_attr(a, out);
    w.u32(static_cast<uint32_t>(e.ids.size()));
    put_header_string(out, e.name, swap);
    w.u64s(e.ids);
  }
  return out;
}

std::vector<uint8_t> feature_build_ids(std::span<const BuildIdEntry> entries, bool swap) {
  std::vector<uint8_t> out;
  for (const auto& e : entries) put_build_id_entry(out, 0, e, swap);
  return out;
}

std::vector<uint8_t> feature_cpu_topology(const CpuTopology& topology, bool swap) {
  std::vector<uint8_t> out;
  ByteWriter w(out, swap);
  auto lists = [&](const std::vector<std::string>& list) {
    w.u32(static_cast<uint32_t>(list.size()));
    for (const auto& s : list) put_header_string(out, s, swap);
  };
  lists(topology.core_siblings);
  lists(topology.thread_siblings);
  for (const auto& cpu : topology.cpus) w.u32(cpu.core_id).u32(cpu.socket_id);
  if (topology.has_die) {
    lists(topology.die_siblings);
    for (const auto& cpu : topology.cpus) w.u32(cpu.die_id);
  }
  return out;
}

std::vector<uint8_t> feature_numa_topology(std::span<const NumaNode> nodes, bool swap) {
  std::vector<uint8_t> out;
  ByteWriter w(out, swap);
  w.u32(static_cast<uint32_t>(nodes.size()));
  for (const auto& n : nodes) {
    w.u32(n.node).u64(n.mem_total).u64(n.mem_free);
    put_header_string(out, n.cpus, swap);
  }
  return out;
}

std::vector<uint8_t> feature_pmu_mappings(std::span<const std::pair<uint32_t, std::string>> pmus, bool swap) {
  std::vector<uint8_t> out;
  ByteWriter w(out, swap);
  w.u32(static_cast<uint32_t>(pmus.size()));
  for (const auto& [type, name] : pmus) {
    w.u32(type);
    put_header_string(out, name, swap);
  }
  return out;
}

std::vector<uint8_t> feature_cache(std::span<const CacheLevel> caches, bool swap) {
  std::vector<uint8_t> out;
  ByteWriter w(out, swap);
  w.u32(1).u32(static_cast<uint32_t>(caches.size()));
  for (const auto& c : caches) {
    w.u32(c.level).u32(c.line_size).u32(c.sets).u32(c.ways);
    put_header_string(out, c.type, swap);
    put_header_string(out, c.size, swap);
    put_header_string(out, c.map, swap);
  }
  return out;
}

std::vector<uint8_t> feature_mem_topology(const MemTopology& topology, bool swap) {
  std::vector<uint8_t> out;
  ByteWriter w(out, swap);
  w.u64(1).u64(topology.block_size).u64(topology.nodes.size());
  for (const auto& n : topology.nodes) {
    uint64_t words = n.nbits / 64 + (n.nbits % 64 != 0);
    if (n.bitmap.size() != words) {
      throw std::invalid_argument(fmt::format("mem_topology node {}: {} bitmap words for {} bits", n.node,
                                              n.bitmap.size(), n.nbits));
    }
    w.u64(n.node).u64(n.size).u64(n.nbits).u64s(n.bitmap);
  }
  return out;
}

}  // namespace tperf::perfdata
