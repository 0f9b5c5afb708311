#include "output/dump_format.h"

#include <fmt/format.h>

#include <cstdio>
#include <iterator>
#include <string>

#include "perfdata/error.h"
#include "perfdata/reader.h"
#include "perfdata/records.h"
#include "perfdata/sample.h"

namespace tperf::output {

namespace {


using namespace perfdata;


// C's "%#x": "0" for zero, "0x.." otherwise (perf's -D lines use it).
std::string chex(uint64_t v) { return v ? fmt::format("{:#x}", v) : std::string("0"); }

std::string hex_bytes(std::span<const uint8_t> b) {
  std::string s;
  for (uint8_t c : b) s += fmt::format("{:02x}", c);
  return s;
}

std::string sample_type_names(uint64_t t) {
  static const char* const kNames[] = {"IP",          "TID",        "TIME",      "ADDR",         "READ",
                                       "CALLCHAIN",   "ID",         "CPU",       "PERIOD",       "STREAM_ID",
                                       "RAW",         "BRANCH_STACK", "REGS_USER", "STACK_USER", "WEIGHT",
                                       "DATA_SRC",    "IDENTIFIER", "TRANSACTION", "REGS_INTR",  "PHYS_ADDR",
                                       "AUX",         "CGROUP",     "DATA_PAGE_SIZE", "CODE_PAGE_SIZE",
                                       "WEIGHT_STRUCT"};
  std::string s;
  for (unsigned b = 0; b < std::size(kNames); ++b) {
    if (t & (1ULL << b)) {
      if (!s.empty()) s += "|";
      s += kNames[b];
    }
  }
  return s;
}

void describe(const Reader& reader, const Record& rec, const DumpFormatOptions& opt, Sample& sample, std::string& line) {
  const bool swap = reader.swapped();
  const auto body = rec.body();
  const uint64_t boff = rec.offset + 8;
  const EventAttr* ea = reader.attr_of(rec);
  const unsigned trailer = (ea && rec.type < kRecordHeaderAttr && rec.type != kRecordSample)
                               ? sample_id_trailer_size(ea->attr)
                               : 0;
  auto out = std::back_inserter(line);
  switch (rec.type) {
    case kRecordMmap: {
      auto e = decode_mmap(body, rec.misc, trailer, swap, boff);
      fmt::format_to(out, " {}/{}: [{}({}) @ {}]: {} {}", e.pid, e.tid, chex(e.addr), chex(e.len), chex(e.pgoff),
                     (rec.misc & kMiscMmapData) ? "r" : "x", e.filename);
      break;
    }
    case kRecordMmap2: {
      auto e = decode_mmap2(body, rec.misc, trailer, swap, boff);
      fmt::format_to(out, " {}/{}: [{}({}) @ {}", e.pid, e.tid, chex(e.addr), chex(e.len), chex(e.pgoff));
      if (rec.misc & kMiscMmapBuildId) {
        fmt::format_to(out, " <{}>", hex_bytes(e.build_id));
      } else {
        fmt::format_to(out, " {:02x}:{:02x} {} {}", e.maj, e.min, e.ino, e.ino_generation);
      }
      fmt::format_to(out, "]: {}{}{}{} {}", (e.prot & 1) ? 'r' : '-', (e.prot & 2) ? 'w' : '-',
                     (e.prot & 4) ? 'x' : '-', (e.flags & 1) ? 's' : 'p', e.filename);
      break;
    }
    case kRecordComm: {
      auto e = decode_comm(body, rec.misc, trailer, swap, boff);
      fmt::format_to(out, "{}: {}:{}/{}", e.exec ? " exec" : "", e.comm, e.pid, e.tid);
      break;
    }
    case kRecordFork:
    case kRecordExit: {
      auto e = decode_task(body, rec.misc, swap, boff);
      fmt::format_to(out, "({}:{}):({}:{})", e.pid, e.tid, e.ppid, e.ptid);
      break;
    }
    case kRecordLost: {
      auto e = decode_lost(body, swap, boff);
      fmt::format_to(out, ": id:{}: lost:{}", e.id, e.lost);
      break;
    }
    case kRecordThrottle:
    case kRecordUnthrottle: {
      auto e = decode_throttle(body, swap, boff);
      fmt::format_to(out, ": {} event id: {} stream id: {}", e.time, e.id, e.stream_id);
      break;
    }
    case kRecordSample: {
      if (!ea) {
        fmt::format_to(out, " (unknown event id)");
        break;
      }
      reader.decode_sample(rec, sample);
      // perf's own line, then tperf's extras after "  #".
      fmt::format_to(out, "(IP, {}): {}/{}: {} period: {} addr: {}", chex(rec.misc), static_cast<int32_t>(sample.pid),
                     static_cast<int32_t>(sample.tid), chex(sample.ip), sample.period, chex(sample.addr));
      fmt::format_to(out, "  # {}", ea->name);
      if (sample.has(kSampleCallchain)) fmt::format_to(out, " chain: {}", sample.callchain.size());
      if (sample.has(kSampleRaw)) fmt::format_to(out, " raw: {}", sample.raw.size());
      if (sample.has(kSampleBranchStack)) fmt::format_to(out, " branches: {}", sample.branches.size());
      if (sample.has(kSampleStackUser)) {
        fmt::format_to(out, " stack: {}/{}", sample.stack_dyn_size, sample.stack_user_size);
      }
      if (sample.deferred_callchain) fmt::format_to(out, " deferred cookie: {:#x}", sample.deferred_cookie);
      if (opt.callchain && !sample.callchain.empty()) {
        fmt::format_to(out, "\n... FP chain: nr:{}", sample.callchain.size());
        for (size_t i = 0; i < sample.callchain.size(); ++i) {
          fmt::format_to(out, "\n.....  {:2}: {:016x}", i, sample.callchain[i]);
        }
      }
      break;
    }
    case kRecordAux: {
      auto e = decode_aux(body, swap, boff);
      fmt::format_to(out, " offset: {:#x} size: {:#x} flags: {:#x}", e.aux_offset, e.aux_size, e.flags);
      break;
    }
    case kRecordItraceStart: {
      ByteReader r(body, swap, boff);
      uint32_t pid = r.u32(), tid = r.u32();
      fmt::format_to(out, " pid: {} tid: {}", pid, tid);
      break;
    }
    case kRecordLostSamples: {
      ByteReader r(body, swap, boff);
      fmt::format_to(out, " lost {}", r.u64());
      break;
    }
    case kRecordSwitch:
    case kRecordSwitchCpuWide: {
      const bool cpu_wide = rec.type == kRecordSwitchCpuWide;
      auto e = decode_switch(body, rec.misc, cpu_wide, swap, boff);
      fmt::format_to(out, " {}{}", e.out ? "OUT" : "IN ", e.out ? (e.preempt ? "  preempt" : "") : "");
      if (cpu_wide) {
        fmt::format_to(out, " {} pid/tid: {:5}/{:<5}", e.out ? "next" : "prev", e.next_prev_pid, e.next_prev_tid);
      }
      break;
    }
    case kRecordNamespaces: {
      auto e = decode_namespaces(body, swap, boff);
      fmt::format_to(out, " {}/{} - nr_namespaces: {}", e.pid, e.tid, e.namespaces.size());
      break;
    }
    case kRecordKsymbol: {
      auto e = decode_ksymbol(body, rec.misc, trailer, swap, boff);
      fmt::format_to(out, " addr {:x} len {} type {} flags {:#x} name {}", e.addr, e.len, e.ksym_type, e.flags,
                     e.name);
      break;
    }
    case kRecordBpfEvent: {
      auto e = decode_bpf_event(body, rec.misc, swap, boff);
      fmt::format_to(out, " type {}, flags {}, id {}", e.type, e.flags, e.id);
      break;
    }
    case kRecordCgroup: {
      auto e = decode_cgroup(body, trailer, swap, boff);
      fmt::format_to(out, " cgroup: {} {}", e.id, e.path);
      break;
    }
    case kRecordTextPoke: {
      auto e = decode_text_poke(body, rec.misc, swap, boff);
      fmt::format_to(out, " addr {:#x} old len {} new len {}", e.addr, e.old_bytes.size(), e.new_bytes.size());
      break;
    }
    case kRecordAuxOutputHwId: {
      ByteReader r(body, swap, boff);
      fmt::format_to(out, " hw_id: {:#x}", r.u64());
      break;
    }
    case kRecordCallchainDeferred: {
      auto e = decode_callchain_deferred(body, rec.misc, swap, boff);
      fmt::format_to(out, " cookie: {:#x} nr: {}", e.cookie, e.ips.size());
      if (opt.callchain) {
        for (size_t i = 0; i < e.ips.size(); ++i) fmt::format_to(out, "\n.....  {:2}: {:016x}", i, e.ips[i]);
      }
      break;
    }
    case kRecordHeaderAttr: {
      ByteReader r(body, swap, boff);
      uint32_t size = peek_attr_size(r);
      auto attr = decode_attr(r, size ? size : kAttrSizeVer0);
      fmt::format_to(out, " type {} size {} config {:#x} sample_type {}", attr.type, attr.size, attr.config,
                     sample_type_names(attr.sample_type));
      break;
    }
    case kRecordHeaderTracingData:
      fmt::format_to(out, " size {}", rec.payload_size);
      break;
    case kRecordIdIndex: {
      auto e = decode_id_index(body, swap, boff);
      fmt::format_to(out, " nr: {}", e.size());
      break;
    }
    case kRecordAuxtrace: {
      ByteReader r(body, swap, boff);
      uint64_t size = r.u64(), offset = r.u64(), ref = r.u64();
      uint32_t idx = r.u32(), tid = r.u32(), cpu = r.u32();
      fmt::format_to(out, " size: {:#x}  offset: {:#x}  ref: {:#x}  idx: {}  tid: {}  cpu: {}", size, offset, ref,
                     idx, static_cast<int32_t>(tid), static_cast<int32_t>(cpu));
      break;
    }
    case kRecordThreadMap: {
      auto e = decode_thread_map(body, swap, boff);
      fmt::format_to(out, " nr: {}", e.size());
      break;
    }
    case kRecordCpuMap: {
      auto cpus = decode_cpu_map(body, swap, boff);
      fmt::format_to(out, " cpus: {}", cpus.size());
      break;
    }
    case kRecordTimeConv: {
      auto e = decode_time_conv(body, swap, boff);
      fmt::format_to(out, " shift {} mult {} zero {}", e.time_shift, e.time_mult, e.time_zero);
      break;
    }
    case kRecordHeaderFeature: {
      ByteReader r(body, swap, boff);
      uint64_t feat = r.u64("feature id");
      fmt::format_to(out, " {} ({})", feature_name(static_cast<unsigned>(feat)), feat);
      break;
    }
    case kRecordEventUpdate: {
      ByteReader r(body, swap, boff);
      uint64_t type = r.u64("event_update type"), id = r.u64("event_update id");
      fmt::format_to(out, " type {} id {}", type, id);
      if (type == 2 || type == 0) fmt::format_to(out, " {}", r.cstring());
      break;
    }
    case kRecordCompressed:
    case kRecordCompressed2:
      fmt::format_to(out, " size {}", rec.size);
      break;
    default:
      break;
  }
}

// The "[cpu ]time " prefix perf puts before each record: from the sample or its sample_id
// trailer, zeros for records that carry neither, "-1 -1 " when the events have no sample_id_all.
void append_timestamp(const Reader& reader, const Record& rec, uint64_t combined_type, std::string& line) {
  if (reader.attrs().empty()) return;
  if (rec.type != kRecordSample && !reader.attrs().front().attr.sample_id_all()) {
    line += "-1 -1 ";
    return;
  }
  // perf's defaults: fields a decoded record lacks are all ones; tool records are all zeros.
  Sample s;
  uint32_t cpu = 0;
  uint64_t time = 0;
  try {
    bool decoded = false;
    if (rec.type == kRecordSample) {
      if (reader.attr_of(rec)) {
        reader.decode_sample(rec, s);
        decoded = true;
      }
    } else {
      decoded = reader.decode_sample_id(rec, s);
    }
    if (decoded) {
      cpu = s.has(kSampleCpu) ? s.cpu : UINT32_MAX;
      time = s.has(kSampleTime) ? s.time : UINT64_MAX;
    }
  } catch (const FormatError&) {
  }
  if (combined_type & kSampleCpu) fmt::format_to(std::back_inserter(line), "{} ", cpu);
  if (combined_type & kSampleTime) fmt::format_to(std::back_inserter(line), "{} ", time);
}

}  // namespace

void append_dump_line(const Reader& reader, const Record& rec, uint64_t combined_type, const DumpFormatOptions& opt,
                      Sample& sample, std::string& line) {
  append_timestamp(reader, rec, combined_type, line);
  if (rec.from_compressed) {
    fmt::format_to(std::back_inserter(line), "{:#x}+z{:#x} [{:#x}]: PERF_RECORD_{}", rec.offset, rec.stream_offset,
                   rec.size, record_type_name(rec.type));
  } else {
    fmt::format_to(std::back_inserter(line), "{:#x} [{:#x}]: PERF_RECORD_{}", rec.offset, rec.size,
                   record_type_name(rec.type));
  }
  if (std::string_view(record_type_name(rec.type)) == "UNKNOWN") {
    fmt::format_to(std::back_inserter(line), "({})", rec.type);
  }
  try {
    describe(reader, rec, opt, sample, line);
  } catch (const FormatError& e) {
    fmt::format_to(std::back_inserter(line), " <malformed: {}>", e.what());
  }
  line += '\n';
}

}  // namespace tperf::output
