// Decoding of the feature sections (HEADER_* payloads). Layouts: shared/reference/perf-abi.md §1.4.
#include "perfdata/features.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <string_view>

#include "perfdata/byte_reader.h"
#include "perfdata/error.h"
#include "perfdata/tracing_data.h"

namespace tperf::perfdata {

namespace {

// perf_header_string: u32 len (NUL and padding included), then len bytes.
std::string read_string(ByteReader& r, const char* what) {
  uint32_t len = r.u32(what);
  return std::string(r.fixed_string(len, what));
}

std::vector<std::string> read_string_list(ByteReader& r, const char* what) {
  uint32_t nr = r.u32(what);
  std::vector<std::string> out;
  for (uint32_t i = 0; i < nr; ++i) out.push_back(read_string(r, what));
  return out;
}

// Every entry of a counted list takes at least `min_entry` bytes: refuse counts the payload
// cannot hold before allocating anything for them.
void check_count(const ByteReader& r, uint64_t nr, uint64_t min_entry, const char* what) {
  if (min_entry != 0 && nr > r.remaining() / min_entry) {
    throw FormatError(r.offset(), fmt::format("{} count {} does not fit in the {} bytes left", what, nr,
                                              r.remaining()));
  }
}

std::vector<std::pair<std::string, std::string>> read_caps(ByteReader& r) {
  uint32_t nr = r.u32("pmu caps count");
  check_count(r, nr, 8, "pmu caps");
  std::vector<std::pair<std::string, std::string>> caps;
  for (uint32_t i = 0; i < nr; ++i) {
    std::string name = read_string(r, "pmu cap name");
    std::string value = read_string(r, "pmu cap value");
    caps.emplace_back(std::move(name), std::move(value));
  }
  return caps;
}

constexpr size_t kBuildIdRecordFixed = 36;     // header, pid, build_id[20], size, reserved[3]
constexpr size_t kOldBuildIdRecordFixed = 32;  // header, build_id[24]: files written before perf 2.6.35
constexpr size_t kBuildIdMax = 20;

// The BUILD_ID records. `old_layout` is the layout without pid that perf 2.6.34 wrote; perf
// recognises it by the kernel's name coming out as "nel.kallsyms]" in the new layout.
// Returns false when the old layout was detected (the caller parses again).
bool read_build_ids(ByteReader r, bool old_layout, std::vector<BuildIdEntry>& out) {
  while (r.remaining() > 0) {
    uint64_t rec_offset = r.offset();
    size_t start = r.pos();
    r.u32("build-id record type");
    uint16_t misc = r.u16("build-id record misc");
    uint16_t size = r.u16("build-id record size");
    size_t fixed = old_layout ? kOldBuildIdRecordFixed : kBuildIdRecordFixed;
    if (size < fixed) {
      throw FormatError(rec_offset, fmt::format("build-id record size {} is smaller than {}", size, fixed));
    }
    r.seek(start);
    ByteReader rec = r.sub(size, "build-id record");
    rec.skip(8);
    BuildIdEntry e;
    e.misc = misc;
    if (old_layout) {
      uint16_t mode = misc & kMiscCpumodeMask;
      // perf's HOST_KERNEL_ID / DEFAULT_GUEST_KERNEL_ID.
      e.pid = (mode == kMiscGuestUser || mode == kMiscGuestKernel) ? 0 : -1;
      auto id = rec.bytes(24, "build-id");
      e.build_id.assign(id.begin(), id.begin() + kBuildIdMax);
    } else {
      e.pid = rec.s32("build-id pid");
      auto id = rec.bytes(kBuildIdMax, "build-id");
      uint8_t id_size = rec.u8("build-id size");
      rec.skip(3, "build-id reserved");
      size_t n = (misc & kMiscBuildIdSize) ? std::min<size_t>(id_size, kBuildIdMax) : kBuildIdMax;
      e.build_id.assign(id.begin(), id.begin() + static_cast<std::ptrdiff_t>(n));
    }
    e.filename = std::string(rec.cstring());
    if (!old_layout && e.filename.compare(0, 13, "nel.kallsyms]") == 0) return false;
    out.push_back(std::move(e));
  }
  return true;
}

// Field offsets in struct bpf_prog_info (uapi linux/bpf.h) and the bits of perf's `arrays`
// mask (enum perf_bpil_array_types) telling which arrays were stored after the struct. Array
// pointers in the file are offsets from the start of that data.
namespace bpf {
constexpr size_t kId = 4, kName = 64, kNameLen = 16, kNrJitedKsyms = 104, kNrJitedFuncLens = 108,
                 kJitedKsyms = 112, kJitedFuncLens = 120, kBtfId = 128, kFuncInfoRecSize = 132, kFuncInfo = 136,
                 kNrFuncInfo = 144, kNrProgTags = 180, kProgTags = 184;
constexpr unsigned kArrayJitedKsyms = 3, kArrayJitedFuncLens = 4, kArrayFuncInfo = 5, kArrayProgTags = 8;
}  // namespace bpf

BpfProgInfo read_bpf_prog(ByteReader& r) {
  uint32_t info_len = r.u32("bpf_prog_info info_len");
  uint32_t data_len = r.u32("bpf_prog_info data_len");
  uint64_t arrays = r.u64("bpf_prog_info arrays");
  ByteReader info = r.sub(info_len, "bpf_prog_info");
  ByteReader data = r.sub(data_len, "bpf_prog_info data");
  // A shorter struct (older kernel) lacks the trailing fields: they read as zero.
  auto field32 = [&](size_t off) -> uint32_t {
    if (off + 4 > info_len) return 0;
    ByteReader c = info;
    c.seek(off);
    return c.u32();
  };
  auto field64 = [&](size_t off) -> uint64_t {
    if (off + 8 > info_len) return 0;
    ByteReader c = info;
    c.seek(off);
    return c.u64();
  };
  // The stored array `bit`, `count` elements of `elem` bytes, or an empty reader.
  auto array = [&](unsigned bit, size_t ptr_field, uint64_t count, uint64_t elem) {
    if (!((arrays >> bit) & 1)) return ByteReader();
    uint64_t off = field64(ptr_field);
    if (off > data_len || count * elem > data_len - off) {
      throw FormatError(data.offset(), fmt::format("bpf_prog_info array at data offset {:#x} ({} x {} bytes) runs "
                                                   "past its {} bytes of data", off, count, elem, data_len));
    }
    ByteReader c = data;
    c.seek(static_cast<size_t>(off));
    return c.sub(static_cast<size_t>(count * elem));
  };
  BpfProgInfo p;
  p.id = field32(bpf::kId);
  if (info_len >= bpf::kName + bpf::kNameLen) {
    ByteReader c = info;
    c.seek(bpf::kName);
    p.name = std::string(c.fixed_string(bpf::kNameLen, "bpf prog name"));
  }
  p.btf_id = field32(bpf::kBtfId);
  p.nr_jited_ksyms = field32(bpf::kNrJitedKsyms);
  p.nr_jited_func_lens = field32(bpf::kNrJitedFuncLens);
  p.nr_prog_tags = field32(bpf::kNrProgTags);
  p.nr_func_info = field32(bpf::kNrFuncInfo);
  ByteReader ksyms = array(bpf::kArrayJitedKsyms, bpf::kJitedKsyms, p.nr_jited_ksyms, 8);
  while (ksyms.remaining()) p.jited_ksyms.push_back(ksyms.u64());
  ByteReader lens = array(bpf::kArrayJitedFuncLens, bpf::kJitedFuncLens, p.nr_jited_func_lens, 4);
  while (lens.remaining()) p.jited_func_lens.push_back(lens.u32());
  ByteReader tags = array(bpf::kArrayProgTags, bpf::kProgTags, p.nr_prog_tags, 8);
  while (tags.remaining()) {
    auto t = tags.bytes(8);
    uint64_t v = 0;
    for (size_t i = 0; i < 8; ++i) v |= uint64_t{t[i]} << (8 * i);
    p.prog_tags.push_back(v);
  }
  uint32_t rec_size = field32(bpf::kFuncInfoRecSize);
  if (rec_size >= 8) {
    ByteReader funcs = array(bpf::kArrayFuncInfo, bpf::kFuncInfo, p.nr_func_info, rec_size);
    while (funcs.remaining()) {
      ByteReader rec = funcs.sub(rec_size);
      rec.skip(4);  // insn_off
      p.func_type_ids.push_back(rec.u32());
    }
  }
  return p;
}

}  // namespace

std::optional<std::string> btf_type_name(std::span<const uint8_t> btf, uint32_t type_id) {
  constexpr uint16_t kBtfMagic = 0xeb9f;
  if (btf.size() < 24) return std::nullopt;
  uint16_t magic = load<uint16_t>(btf.data(), false);
  if (magic != kBtfMagic && magic != ByteReader::byteswap(kBtfMagic)) return std::nullopt;
  try {
    ByteReader r(btf, magic != kBtfMagic, 0);
    r.skip(4);  // magic, version, flags
    uint64_t hdr_len = r.u32(), type_off = r.u32(), type_len = r.u32(), str_off = r.u32(), str_len = r.u32();
    uint64_t types_at = hdr_len + type_off, strs_at = hdr_len + str_off;
    if (hdr_len < 24 || types_at > btf.size() || type_len > btf.size() - types_at || strs_at > btf.size() ||
        str_len > btf.size() - strs_at) {
      return std::nullopt;
    }
    auto strs = btf.subspan(static_cast<size_t>(strs_at), static_cast<size_t>(str_len));
    auto name_at = [&](uint32_t off) -> std::optional<std::string> {
      if (off >= strs.size()) return std::nullopt;
      const char* p = reinterpret_cast<const char*>(strs.data()) + off;
      return std::string(p, strnlen(p, strs.size() - off));
    };
    if (type_id == 0) return std::string();
    ByteReader t(btf.subspan(static_cast<size_t>(types_at), static_cast<size_t>(type_len)), r.swapped(), types_at);
    for (uint32_t id = 1; t.remaining() > 0; ++id) {
      uint32_t name_off = t.u32(), info = t.u32();
      t.u32();  // size or type
      uint32_t kind = (info >> 24) & 0x1f, vlen = info & 0xffff;
      size_t extra;
      switch (kind) {
        case 1: case 14: case 17: extra = 4; break;                       // INT, VAR, DECL_TAG
        case 2: case 7: case 8: case 9: case 10: case 11: case 12: case 16: case 18: extra = 0; break;
        case 3: extra = 12; break;                                         // ARRAY
        case 4: case 5: case 15: case 19: extra = size_t{vlen} * 12; break;  // STRUCT, UNION, DATASEC, ENUM64
        case 6: case 13: extra = size_t{vlen} * 8; break;                  // ENUM, FUNC_PROTO
        default: return std::nullopt;
      }
      if (id == type_id) return name_at(name_off);
      t.skip(extra);
    }
  } catch (const FormatError&) {
  }
  return std::nullopt;
}

std::string feature_name(unsigned bit) {
  static const char* const kNames[] = {
      "RESERVED",      "TRACING_DATA",  "BUILD_ID",        "HOSTNAME",     "OSRELEASE",    "VERSION",
      "ARCH",          "NRCPUS",        "CPUDESC",         "CPUID",        "TOTAL_MEM",    "CMDLINE",
      "EVENT_DESC",    "CPU_TOPOLOGY",  "NUMA_TOPOLOGY",   "BRANCH_STACK", "PMU_MAPPINGS", "GROUP_DESC",
      "AUXTRACE",      "STAT",          "CACHE",           "SAMPLE_TIME",  "MEM_TOPOLOGY", "CLOCKID",
      "DIR_FORMAT",    "BPF_PROG_INFO", "BPF_BTF",         "COMPRESSED",   "CPU_PMU_CAPS", "CLOCK_DATA",
      "HYBRID_TOPOLOGY", "PMU_CAPS",    "CPU_DOMAIN_INFO", "E_MACHINE",    "CLN_SIZE",
  };
  static const char* const kSimpleperf[] = {"SIMPLEPERF_FILE", "SIMPLEPERF_META_INFO", "SIMPLEPERF_DEBUG_UNWIND",
                                            "SIMPLEPERF_DEBUG_UNWIND_FILE", "SIMPLEPERF_FILE2"};
  if (bit < std::size(kNames)) return kNames[bit];
  if (bit >= kFeatSimpleperfFile && bit < kFeatSimpleperfFile + std::size(kSimpleperf)) {
    return kSimpleperf[bit - kFeatSimpleperfFile];
  }
  return fmt::format("feature_{}", bit);
}

bool feature_known(unsigned bit) { return bit >= kFeatTracingData && bit <= kFeatPmuCaps; }

void Features::parse(unsigned bit, std::span<const uint8_t> payload, bool swap, uint64_t offset) {
  if (bit >= kFeatBits) {
    warnings.push_back(fmt::format("feature bit {} at offset {:#x}: out of range", bit, offset));
    return;
  }
  present.set(bit);
  parsed.reset(bit);
  raw[bit].assign(payload.begin(), payload.end());
  ByteReader r(payload, swap, offset);
  try {
    switch (bit) {
      case kFeatBuildId: {
        // Entries accumulate: pipe mode delivers one HEADER_BUILD_ID record per entry.
        size_t before = build_ids.size();
        if (!read_build_ids(r, false, build_ids)) {
          build_ids.resize(before);
          read_build_ids(r, true, build_ids);
        }
        break;
      }
      case kFeatTracingData:
        tracepoint_names = perfdata::tracepoint_names(payload, offset);
        break;
      case kFeatHostname:
        hostname = read_string(r, "hostname");
        break;
      case kFeatOsrelease:
        osrelease = read_string(r, "osrelease");
        break;
      case kFeatVersion:
        version = read_string(r, "version");
        break;
      case kFeatArch:
        arch = read_string(r, "arch");
        break;
      case kFeatCpudesc:
        cpudesc = read_string(r, "cpudesc");
        break;
      case kFeatCpuid:
        cpuid = read_string(r, "cpuid");
        break;
      case kFeatNrcpus: {
        uint32_t avail = r.u32("nr_cpus_available");
        uint32_t online = r.u32("nr_cpus_online");
        nr_cpus_available = avail;
        nr_cpus_online = online;
        break;
      }
      case kFeatTotalMem:
        total_mem_kb = r.u64("total_mem");
        break;
      case kFeatCmdline: {
        uint32_t nr = r.u32("cmdline count");
        check_count(r, nr, 4, "cmdline");
        std::vector<std::string> args;
        for (uint32_t i = 0; i < nr; ++i) args.push_back(read_string(r, "cmdline argument"));
        cmdline = std::move(args);
        break;
      }
      case kFeatEventDesc: {
        uint32_t nr = r.u32("event_desc count");
        uint32_t attr_size = r.u32("event_desc attr_size");
        if (attr_size < kAttrSizeVer0) {
          throw FormatError(r.offset() - 4, fmt::format("event_desc attr_size {} is smaller than 64", attr_size));
        }
        check_count(r, nr, uint64_t{attr_size} + 8, "event_desc");
        std::vector<EventDescEntry> events;
        for (uint32_t i = 0; i < nr; ++i) {
          EventDescEntry e;
          // The section's attr_size, not attr.size, is the stride (perf reads it that way).
          e.attr = decode_attr(r, attr_size);
          uint32_t nr_ids = r.u32("event_desc nr_ids");
          e.name = read_string(r, "event_desc name");
          r.need(uint64_t{nr_ids} * 8, "event_desc ids");
          e.ids.reserve(nr_ids);
          for (uint32_t j = 0; j < nr_ids; ++j) e.ids.push_back(r.u64("event_desc id"));
          events.push_back(std::move(e));
        }
        event_desc = std::move(events);
        break;
      }
      case kFeatCpuTopology: {
        CpuTopology t;
        t.core_siblings = read_string_list(r, "cpu_topology core siblings");
        t.thread_siblings = read_string_list(r, "cpu_topology thread siblings");
        // Older perf stops here; core/socket ids (per available cpu) and die info came later.
        if (r.remaining() > 0 && nr_cpus_available > 0) {
          check_count(r, nr_cpus_available, 8, "cpu_topology cpus");
          t.cpus.resize(nr_cpus_available);
          for (auto& cpu : t.cpus) {
            cpu.core_id = r.u32("cpu_topology core_id");
            cpu.socket_id = r.u32("cpu_topology socket_id");
          }
          if (r.remaining() > 0) {
            t.die_siblings = read_string_list(r, "cpu_topology die siblings");
            for (auto& cpu : t.cpus) cpu.die_id = r.u32("cpu_topology die_id");
            t.has_die = true;
          }
        }
        cpu_topology = std::move(t);
        break;
      }
      case kFeatNumaTopology: {
        uint32_t nr = r.u32("numa_topology count");
        check_count(r, nr, 24, "numa_topology");
        std::vector<NumaNode> nodes;
        for (uint32_t i = 0; i < nr; ++i) {
          NumaNode n;
          n.node = r.u32("numa node");
          n.mem_total = r.u64("numa mem_total");
          n.mem_free = r.u64("numa mem_free");
          n.cpus = read_string(r, "numa cpus");
          nodes.push_back(std::move(n));
        }
        numa_topology = std::move(nodes);
        break;
      }
      case kFeatPmuMappings: {
        uint32_t nr = r.u32("pmu_mappings count");
        check_count(r, nr, 8, "pmu_mappings");
        std::vector<std::pair<uint32_t, std::string>> maps;
        for (uint32_t i = 0; i < nr; ++i) {
          uint32_t type = r.u32("pmu type");
          maps.emplace_back(type, read_string(r, "pmu name"));
        }
        pmu_mappings = std::move(maps);
        break;
      }
      case kFeatGroupDesc: {
        uint32_t nr = r.u32("group_desc count");
        check_count(r, nr, 12, "group_desc");
        std::vector<GroupDescEntry> groups;
        for (uint32_t i = 0; i < nr; ++i) {
          GroupDescEntry g;
          g.name = read_string(r, "group name");
          g.leader_idx = r.u32("group leader_idx");
          g.nr_members = r.u32("group nr_members");
          groups.push_back(std::move(g));
        }
        group_desc = std::move(groups);
        break;
      }
      case kFeatAuxtrace: {
        uint64_t nr = r.u64("auxtrace index count");
        check_count(r, nr, 16, "auxtrace index");
        std::vector<AuxtraceIndexEntry> index;
        for (uint64_t i = 0; i < nr; ++i) {
          AuxtraceIndexEntry e;
          e.file_offset = r.u64("auxtrace file_offset");
          e.size = r.u64("auxtrace size");
          index.push_back(e);
        }
        auxtrace_index = std::move(index);
        break;
      }
      case kFeatCache: {
        uint32_t ver = r.u32("cache version");
        if (ver != 1) throw FormatError(offset, fmt::format("unsupported cache version {}", ver));
        uint32_t nr = r.u32("cache count");
        check_count(r, nr, 28, "cache");
        std::vector<CacheLevel> levels;
        for (uint32_t i = 0; i < nr; ++i) {
          CacheLevel c;
          c.level = r.u32("cache level");
          c.line_size = r.u32("cache line_size");
          c.sets = r.u32("cache sets");
          c.ways = r.u32("cache ways");
          c.type = read_string(r, "cache type");
          c.size = read_string(r, "cache size");
          c.map = read_string(r, "cache map");
          levels.push_back(std::move(c));
        }
        caches = std::move(levels);
        break;
      }
      case kFeatSampleTime: {
        uint64_t first = r.u64("first_sample_time");
        uint64_t last = r.u64("last_sample_time");
        first_sample_time = first;
        last_sample_time = last;
        break;
      }
      case kFeatMemTopology: {
        MemTopology m;
        m.version = r.u64("mem_topology version");
        if (m.version != 1) throw FormatError(offset, fmt::format("unsupported mem_topology version {}", m.version));
        m.block_size = r.u64("mem_topology block_size");
        uint64_t nr = r.u64("mem_topology count");
        check_count(r, nr, 24, "mem_topology");
        for (uint64_t i = 0; i < nr; ++i) {
          MemTopologyNode n;
          n.node = r.u64("mem node");
          n.size = r.u64("mem node size");
          n.nbits = r.u64("mem node bitmap size");
          uint64_t words = n.nbits / 64 + (n.nbits % 64 != 0);
          check_count(r, words, 8, "mem node bitmap");
          for (uint64_t w = 0; w < words; ++w) n.bitmap.push_back(r.u64("mem node bitmap"));
          m.nodes.push_back(std::move(n));
        }
        mem_topology = std::move(m);
        break;
      }
      case kFeatClockid:
        clockid_res_ns = r.u64("clockid resolution");
        break;
      case kFeatDirFormat:
        dir_format_version = r.u64("dir_format version");
        break;
      case kFeatBpfProgInfo: {
        uint32_t nr = r.u32("bpf_prog_info count");
        check_count(r, nr, 16, "bpf_prog_info");
        std::vector<BpfProgInfo> progs;
        for (uint32_t i = 0; i < nr; ++i) progs.push_back(read_bpf_prog(r));
        bpf_progs = std::move(progs);
        break;
      }
      case kFeatBpfBtf: {
        uint32_t nr = r.u32("bpf_btf count");
        check_count(r, nr, 8, "bpf_btf");
        std::vector<BpfBtf> btfs;
        for (uint32_t i = 0; i < nr; ++i) {
          BpfBtf b;
          b.id = r.u32("btf id");
          uint32_t size = r.u32("btf size");
          auto data = r.bytes(size, "btf data");
          b.data.assign(data.begin(), data.end());
          btfs.push_back(std::move(b));
        }
        bpf_btfs = std::move(btfs);
        break;
      }
      case kFeatCompressed: {
        CompressedInfo c;
        c.version = r.u32("compressed version");
        c.type = r.u32("compressed type");
        c.level = r.u32("compressed level");
        c.ratio = r.u32("compressed ratio");
        c.mmap_len = r.u32("compressed mmap_len");
        compressed = c;
        break;
      }
      case kFeatCpuPmuCaps:
        cpu_pmu_caps = read_caps(r);
        break;
      case kFeatClockData: {
        ClockData c;
        c.version = r.u32("clock_data version");
        if (c.version != 1) throw FormatError(offset, fmt::format("unsupported clock_data version {}", c.version));
        c.clockid = r.u32("clock_data clockid");
        c.wall_clock_ns = r.u64("clock_data wall clock");
        c.clockid_ns = r.u64("clock_data clockid time");
        clock_data = c;
        break;
      }
      case kFeatHybridTopology: {
        uint32_t nr = r.u32("hybrid_topology count");
        check_count(r, nr, 8, "hybrid_topology");
        std::vector<std::pair<std::string, std::string>> nodes;
        for (uint32_t i = 0; i < nr; ++i) {
          std::string pmu = read_string(r, "hybrid pmu name");
          std::string cpus = read_string(r, "hybrid cpus");
          nodes.emplace_back(std::move(pmu), std::move(cpus));
        }
        hybrid_topology = std::move(nodes);
        break;
      }
      case kFeatPmuCaps: {
        uint32_t nr = r.u32("pmu_caps count");
        check_count(r, nr, 8, "pmu_caps");
        std::vector<PmuCaps> pmus;
        for (uint32_t i = 0; i < nr; ++i) {
          PmuCaps p;
          p.caps = read_caps(r);
          p.pmu_name = read_string(r, "pmu_caps pmu name");
          pmus.push_back(std::move(p));
        }
        pmu_caps = std::move(pmus);
        break;
      }
      default:
        // TRACING_DATA, BRANCH_STACK, STAT and every bit tperf does not decode: raw only.
        break;
    }
    parsed.set(bit);
  } catch (const FormatError& e) {
    warnings.push_back(fmt::format("feature {} at offset {:#x}: {}", feature_name(bit), offset, e.what()));
  }
}

}  // namespace tperf::perfdata
