#include "perfdata/records.h"

#include <fmt/format.h>

#include <algorithm>

#include "perfdata/byte_reader.h"

namespace tperf::perfdata {

namespace {

// The part of a body before its sample_id trailer; a body shorter than its trailer is an error.
ByteReader without_trailer(std::span<const uint8_t> body, unsigned trailer, bool swap, uint64_t off,
                           const char* what) {
  if (trailer > body.size()) {
    throw FormatError(off, fmt::format("{} body of {} bytes is shorter than its {}-byte sample_id", what,
                                       body.size(), trailer));
  }
  return ByteReader(body.first(body.size() - trailer), swap, off);
}

std::string rest_string(ByteReader& r) { return std::string(r.cstring()); }

}  // namespace

MmapEvent decode_mmap(std::span<const uint8_t> body, uint16_t misc, unsigned trailer, bool swap, uint64_t off) {
  ByteReader r = without_trailer(body, trailer, swap, off, "MMAP");
  MmapEvent e;
  e.misc = misc;
  e.pid = r.s32("mmap pid");
  e.tid = r.s32("mmap tid");
  e.addr = r.u64("mmap addr");
  e.len = r.u64("mmap len");
  e.pgoff = r.u64("mmap pgoff");
  e.filename = rest_string(r);
  return e;
}

Mmap2Event decode_mmap2(std::span<const uint8_t> body, uint16_t misc, unsigned trailer, bool swap, uint64_t off) {
  ByteReader r = without_trailer(body, trailer, swap, off, "MMAP2");
  Mmap2Event e;
  e.misc = misc;
  e.pid = r.s32("mmap2 pid");
  e.tid = r.s32("mmap2 tid");
  e.addr = r.u64("mmap2 addr");
  e.len = r.u64("mmap2 len");
  e.pgoff = r.u64("mmap2 pgoff");
  if (misc & kMiscMmapBuildId) {
    uint8_t n = r.u8("mmap2 build_id size");
    r.skip(3, "mmap2 reserved");
    auto id = r.bytes(20, "mmap2 build_id");
    e.build_id.assign(id.begin(), id.begin() + std::min<size_t>(n, 20));
  } else {
    e.maj = r.u32("mmap2 maj");
    e.min = r.u32("mmap2 min");
    e.ino = r.u64("mmap2 ino");
    e.ino_generation = r.u64("mmap2 ino_generation");
  }
  e.prot = r.u32("mmap2 prot");
  e.flags = r.u32("mmap2 flags");
  e.filename = rest_string(r);
  return e;
}

CommEvent decode_comm(std::span<const uint8_t> body, uint16_t misc, unsigned trailer, bool swap, uint64_t off) {
  ByteReader r = without_trailer(body, trailer, swap, off, "COMM");
  CommEvent e;
  e.misc = misc;
  e.exec = (misc & kMiscCommExec) != 0;
  e.pid = r.s32("comm pid");
  e.tid = r.s32("comm tid");
  e.comm = rest_string(r);
  return e;
}

TaskEvent decode_task(std::span<const uint8_t> body, uint16_t misc, bool swap, uint64_t off) {
  ByteReader r(body, swap, off);
  TaskEvent e;
  e.misc = misc;
  e.pid = r.s32("fork/exit pid");
  e.ppid = r.s32("fork/exit ppid");
  e.tid = r.s32("fork/exit tid");
  e.ptid = r.s32("fork/exit ptid");
  e.time = r.u64("fork/exit time");
  return e;
}

LostEvent decode_lost(std::span<const uint8_t> body, bool swap, uint64_t off) {
  ByteReader r(body, swap, off);
  LostEvent e;
  e.id = r.u64("lost id");
  e.lost = r.u64("lost count");
  return e;
}

uint64_t decode_lost_samples(std::span<const uint8_t> body, bool swap, uint64_t off) {
  ByteReader r(body, swap, off);
  return r.u64("lost samples count");
}

ThrottleEvent decode_throttle(std::span<const uint8_t> body, bool swap, uint64_t off) {
  ByteReader r(body, swap, off);
  ThrottleEvent e;
  e.time = r.u64("throttle time");
  e.id = r.u64("throttle id");
  e.stream_id = r.u64("throttle stream_id");
  return e;
}

AuxEvent decode_aux(std::span<const uint8_t> body, bool swap, uint64_t off) {
  ByteReader r(body, swap, off);
  AuxEvent e;
  e.aux_offset = r.u64("aux offset");
  e.aux_size = r.u64("aux size");
  e.flags = r.u64("aux flags");
  return e;
}

SwitchCpuWideEvent decode_switch(std::span<const uint8_t> body, uint16_t misc, bool cpu_wide, bool swap,
                                 uint64_t off) {
  SwitchCpuWideEvent e;
  e.out = (misc & kMiscSwitchOut) != 0;
  e.preempt = (misc & kMiscSwitchOutPreempt) != 0;
  if (cpu_wide) {
    ByteReader r(body, swap, off);
    e.next_prev_pid = r.s32("switch next_prev_pid");
    e.next_prev_tid = r.s32("switch next_prev_tid");
  }
  return e;
}

NamespacesEvent decode_namespaces(std::span<const uint8_t> body, bool swap, uint64_t off) {
  ByteReader r(body, swap, off);
  NamespacesEvent e;
  e.pid = r.s32("namespaces pid");
  e.tid = r.s32("namespaces tid");
  uint64_t nr = r.u64("namespaces nr");
  if (nr > r.remaining() / 16) r.fail("namespaces entries", 16);
  for (uint64_t i = 0; i < nr; ++i) {
    NamespaceEntry ns;
    ns.dev = r.u64();
    ns.ino = r.u64();
    e.namespaces.push_back(ns);
  }
  return e;
}

KsymbolEvent decode_ksymbol(std::span<const uint8_t> body, uint16_t misc, unsigned trailer, bool swap, uint64_t off) {
  ByteReader r = without_trailer(body, trailer, swap, off, "KSYMBOL");
  KsymbolEvent e;
  e.misc = misc;
  e.addr = r.u64("ksymbol addr");
  e.len = r.u32("ksymbol len");
  e.ksym_type = r.u16("ksymbol type");
  e.flags = r.u16("ksymbol flags");
  e.name = rest_string(r);
  return e;
}

BpfEvent decode_bpf_event(std::span<const uint8_t> body, uint16_t misc, bool swap, uint64_t off) {
  ByteReader r(body, swap, off);
  BpfEvent e;
  e.misc = misc;
  e.type = r.u16("bpf_event type");
  e.flags = r.u16("bpf_event flags");
  e.id = r.u32("bpf_event id");
  auto tag = r.bytes(8, "bpf_event tag");
  std::copy(tag.begin(), tag.end(), e.tag.begin());
  return e;
}

CgroupEvent decode_cgroup(std::span<const uint8_t> body, unsigned trailer, bool swap, uint64_t off) {
  ByteReader r = without_trailer(body, trailer, swap, off, "CGROUP");
  CgroupEvent e;
  e.id = r.u64("cgroup id");
  e.path = rest_string(r);
  return e;
}

TextPokeEvent decode_text_poke(std::span<const uint8_t> body, uint16_t misc, bool swap, uint64_t off) {
  ByteReader r(body, swap, off);
  TextPokeEvent e;
  e.misc = misc;
  e.addr = r.u64("text_poke addr");
  uint16_t old_len = r.u16("text_poke old_len");
  uint16_t new_len = r.u16("text_poke new_len");
  auto o = r.bytes(old_len, "text_poke old bytes");
  auto n = r.bytes(new_len, "text_poke new bytes");
  e.old_bytes.assign(o.begin(), o.end());
  e.new_bytes.assign(n.begin(), n.end());
  return e;
}

CallchainDeferredEvent decode_callchain_deferred(std::span<const uint8_t> body, uint16_t misc, bool swap,
                                                 uint64_t off) {
  ByteReader r(body, swap, off);
  CallchainDeferredEvent e;
  e.misc = misc;
  e.cookie = r.u64("deferred cookie");
  uint64_t nr = r.u64("deferred nr");
  if (nr > r.remaining() / 8) r.fail("deferred callchain ips", 8);
  e.ips.resize(static_cast<size_t>(nr));
  for (auto& ip : e.ips) ip = r.u64();
  return e;
}

std::vector<IdIndexEntry> decode_id_index(std::span<const uint8_t> body, bool swap, uint64_t off) {
  ByteReader r(body, swap, off);
  uint64_t nr = r.u64("id_index nr");
  if (nr > r.remaining() / 32) r.fail("id_index entries", 32);
  std::vector<IdIndexEntry> out(static_cast<size_t>(nr));
  for (auto& e : out) {
    e.id = r.u64();
    e.idx = r.u64();
    e.cpu = r.s64();
    e.tid = r.s64();
  }
  return out;
}

std::vector<ThreadMapEntry> decode_thread_map(std::span<const uint8_t> body, bool swap, uint64_t off) {
  ByteReader r(body, swap, off);
  uint64_t nr = r.u64("thread_map nr");
  if (nr > r.remaining() / 24) r.fail("thread_map entries", 24);
  std::vector<ThreadMapEntry> out(static_cast<size_t>(nr));
  for (auto& e : out) {
    e.pid = r.s64();
    e.comm = std::string(r.fixed_string(16));
  }
  return out;
}

std::vector<uint32_t> decode_cpu_map(std::span<const uint8_t> body, bool swap, uint64_t off) {
  ByteReader r(body, swap, off);
  std::vector<uint32_t> cpus;
  uint16_t type = r.u16("cpu_map type");
  switch (type) {
    case 0: {  // list of cpus
      uint16_t nr = r.u16("cpu_map nr");
      for (uint16_t i = 0; i < nr; ++i) cpus.push_back(r.u16("cpu_map cpu"));
      break;
    }
    case 1: {  // bitmask
      uint16_t nr = r.u16("cpu_map mask nr");
      uint16_t long_size = r.u16("cpu_map long_size");
      if (long_size != 4 && long_size != 8) {
        throw FormatError(r.offset() - 2, fmt::format("cpu_map mask long_size {} (expected 4 or 8)", long_size));
      }
      if (long_size == 8) r.skip(4, "cpu_map pad");  // u64 mask words are aligned within the union
      // Older perf aligned the mask words differently; take words as they come.
      for (uint16_t w = 0; w < nr; ++w) {
        uint64_t word = long_size == 8 ? r.u64("cpu_map mask") : r.u32("cpu_map mask");
        for (unsigned b = 0; b < long_size * 8u; ++b) {
          if (word & (1ULL << b)) cpus.push_back(w * long_size * 8u + b);
        }
      }
      break;
    }
    case 2: {  // range
      uint8_t any_cpu = r.u8("cpu_map any_cpu");
      r.skip(1, "cpu_map pad");
      uint16_t start = r.u16("cpu_map start");
      uint16_t end = r.u16("cpu_map end");
      (void)any_cpu;
      if (end >= start) {
        for (uint32_t c = start; c <= end; ++c) cpus.push_back(c);
      }
      break;
    }
    default:
      throw FormatError(off, fmt::format("cpu_map type {} unknown", type));
  }
  return cpus;
}

TimeConv decode_time_conv(std::span<const uint8_t> body, bool swap, uint64_t off) {
  ByteReader r(body, swap, off);
  TimeConv e;
  e.extended = false;
  e.time_shift = r.u64("time_shift");
  e.time_mult = r.u64("time_mult");
  e.time_zero = r.u64("time_zero");
  if (r.remaining() >= 24) {
    e.extended = true;
    e.time_cycles = r.u64();
    e.time_mask = r.u64();
    e.cap_user_time_zero = r.u8() != 0;
    e.cap_user_time_short = r.u8() != 0;
  }
  return e;
}

}  // namespace tperf::perfdata
