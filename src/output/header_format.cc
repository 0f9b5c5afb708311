#include "output/header_format.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

#include "perfdata/error.h"
#include "perfdata/reader.h"

namespace tperf::output {

namespace {


using namespace perfdata;

// perf 6.1's HEADER_LAST_FEATURE: the bits its header printer knows.
constexpr unsigned kPerfLastFeature = 32;


// Output is collected and written in pieces, so a long stats pass shows the header first.
class Out {
 public:
  template <typename... Args>
  void operator()(fmt::format_string<Args...> f, Args&&... args) {
    fmt::format_to(std::back_inserter(buf_), f, std::forward<Args>(args)...);
  }
  void flush() {
    std::fwrite(buf_.data(), 1, buf_.size(), stdout);
    std::fflush(stdout);
    buf_.clear();
  }

 private:
  std::string buf_;
};

// ctime(3) layout, local time: "Sun Nov 22 02:10:18 2026".
std::string ctime_string(time_t t) {
  struct tm tm {};
  if (!localtime_r(&t, &tm)) return "<error>";
  char b[64];
  std::strftime(b, sizeof b, "%a %b %e %H:%M:%S %Y", &tm);
  return b;
}

struct BitName {
  uint64_t bit;
  const char* name;
};

// Bit names in the order perf prints them (not bit order: IDENTIFIER comes before REGS_INTR).
constexpr BitName kSampleTypeNames[] = {
    {kSampleIp, "IP"},
    {kSampleTid, "TID"},
    {kSampleTime, "TIME"},
    {kSampleAddr, "ADDR"},
    {kSampleRead, "READ"},
    {kSampleCallchain, "CALLCHAIN"},
    {kSampleId, "ID"},
    {kSampleCpu, "CPU"},
    {kSamplePeriod, "PERIOD"},
    {kSampleStreamId, "STREAM_ID"},
    {kSampleRaw, "RAW"},
    {kSampleBranchStack, "BRANCH_STACK"},
    {kSampleRegsUser, "REGS_USER"},
    {kSampleStackUser, "STACK_USER"},
    {kSampleIdentifier, "IDENTIFIER"},
    {kSampleRegsIntr, "REGS_INTR"},
    {kSampleDataSrc, "DATA_SRC"},
    {kSampleWeight, "WEIGHT"},
    {kSamplePhysAddr, "PHYS_ADDR"},
    {kSampleAux, "AUX"},
    {kSampleCgroup, "CGROUP"},
    {kSampleDataPageSize, "DATA_PAGE_SIZE"},
    {kSampleCodePageSize, "CODE_PAGE_SIZE"},
    {kSampleWeightStruct, "WEIGHT_STRUCT"},
};

constexpr BitName kBranchSampleNames[] = {
    {1ULL << 0, "USER"},         {1ULL << 1, "KERNEL"},      {1ULL << 2, "HV"},         {1ULL << 3, "ANY"},
    {1ULL << 4, "ANY_CALL"},     {1ULL << 5, "ANY_RETURN"},  {1ULL << 6, "IND_CALL"},   {1ULL << 7, "ABORT_TX"},
    {1ULL << 8, "IN_TX"},        {1ULL << 9, "NO_TX"},       {1ULL << 10, "COND"},      {1ULL << 11, "CALL_STACK"},
    {1ULL << 12, "IND_JUMP"},    {1ULL << 13, "CALL"},       {1ULL << 14, "NO_FLAGS"},  {1ULL << 15, "NO_CYCLES"},
    {1ULL << 16, "TYPE_SAVE"},   {1ULL << 17, "HW_INDEX"},   {1ULL << 18, "PRIV_SAVE"}, {1ULL << 19, "COUNTERS"},
};

constexpr BitName kReadFormatNames[] = {
    {kReadTotalTimeEnabled, "TOTAL_TIME_ENABLED"},
    {kReadTotalTimeRunning, "TOTAL_TIME_RUNNING"},
    {kReadId, "ID"},
    {kReadGroup, "GROUP"},
    {kReadLost, "LOST"},
};

// One-bit flags of the attr flags word, in perf's order; precise_ip (2 bits) sits between
// watermark and mmap_data. defer_callchain/defer_output are newer than perf 6.1.
constexpr struct {
  unsigned bit;
  const char* name;
} kFlagNames[] = {
    {kFlagDisabled, "disabled"},
    {kFlagInherit, "inherit"},
    {kFlagPinned, "pinned"},
    {kFlagExclusive, "exclusive"},
    {kFlagExcludeUser, "exclude_user"},
    {kFlagExcludeKernel, "exclude_kernel"},
    {kFlagExcludeHv, "exclude_hv"},
    {kFlagExcludeIdle, "exclude_idle"},
    {kFlagMmap, "mmap"},
    {kFlagComm, "comm"},
    {kFlagFreq, "freq"},
    {kFlagInheritStat, "inherit_stat"},
    {kFlagEnableOnExec, "enable_on_exec"},
    {kFlagTask, "task"},
    {kFlagWatermark, "watermark"},
    {kFlagPreciseIp0, "precise_ip"},
    {kFlagMmapData, "mmap_data"},
    {kFlagSampleIdAll, "sample_id_all"},
    {kFlagExcludeHost, "exclude_host"},
    {kFlagExcludeGuest, "exclude_guest"},
    {kFlagExcludeCallchainKernel, "exclude_callchain_kernel"},
    {kFlagExcludeCallchainUser, "exclude_callchain_user"},
    {kFlagMmap2, "mmap2"},
    {kFlagCommExec, "comm_exec"},
    {kFlagUseClockid, "use_clockid"},
    {kFlagContextSwitch, "context_switch"},
    {kFlagWriteBackward, "write_backward"},
    {kFlagNamespaces, "namespaces"},
    {kFlagKsymbol, "ksymbol"},
    {kFlagBpfEvent, "bpf_event"},
    {kFlagAuxOutput, "aux_output"},
    {kFlagCgroup, "cgroup"},
    {kFlagTextPoke, "text_poke"},
    {kFlagBuildId, "build_id"},
    {kFlagInheritThread, "inherit_thread"},
    {kFlagRemoveOnExec, "remove_on_exec"},
    {kFlagSigtrap, "sigtrap"},
    {kFlagDeferCallchain, "defer_callchain"},
    {kFlagDeferOutput, "defer_output"},
};

// The ", name = value" list perf prints for an attr. perf formats every value into one
// buffer and prints the buffer; a bit field none of whose bits has a name leaves the buffer
// untouched, so the previous field's value is printed again. That is reproduced here.
class AttrFormatter {
 public:
  explicit AttrFormatter(std::string& out) : out_(out) {}

  void unsigned_field(const char* name, uint64_t v) {
    if (!v) return;
    buf_ = fmt::format("{}", v);
    emit(name);
  }
  void signed_field(const char* name, int64_t v) {
    if (!v) return;
    buf_ = fmt::format("{}", v);
    emit(name);
  }
  void hex_field(const char* name, uint64_t v) {
    if (!v) return;
    buf_ = fmt::format("{:#x}", v);
    emit(name);
  }
  template <size_t N>
  void bits_field(const char* name, uint64_t v, const BitName (&names)[N]) {
    if (!v) return;
    std::string s;
    for (const auto& b : names) {
      if (!(v & b.bit)) continue;
      if (!s.empty()) s += '|';
      s += b.name;
    }
    if (!s.empty()) buf_ = std::move(s);
    emit(name);
  }

 private:
  void emit(const char* name) { fmt::format_to(std::back_inserter(out_), ", {} = {}", name, buf_); }

  std::string& out_;
  std::string buf_;
};

std::string format_attr_fields(const PerfEventAttr& a) {
  std::string out;
  AttrFormatter f(out);
  f.unsigned_field("type", a.type);
  f.unsigned_field("size", a.size);
  f.hex_field("config", a.config);
  f.unsigned_field("{ sample_period, sample_freq }", a.sample_period);
  f.bits_field("sample_type", a.sample_type, kSampleTypeNames);
  f.bits_field("read_format", a.read_format, kReadFormatNames);
  for (const auto& fl : kFlagNames) {
    if (fl.bit == kFlagPreciseIp0) {
      f.unsigned_field(fl.name, a.precise_ip());
    } else {
      f.unsigned_field(fl.name, (a.flags >> fl.bit) & 1);
    }
  }
  f.unsigned_field("{ wakeup_events, wakeup_watermark }", a.wakeup_events);
  f.unsigned_field("bp_type", a.bp_type);
  f.hex_field("{ bp_addr, config1 }", a.config1);
  f.hex_field("{ bp_len, config2 }", a.config2);
  f.bits_field("branch_sample_type", a.branch_sample_type, kBranchSampleNames);
  f.hex_field("sample_regs_user", a.sample_regs_user);
  f.unsigned_field("sample_stack_user", a.sample_stack_user);
  f.signed_field("clockid", a.clockid);
  f.hex_field("sample_regs_intr", a.sample_regs_intr);
  f.unsigned_field("aux_watermark", a.aux_watermark);
  f.unsigned_field("sample_max_stack", a.sample_max_stack);
  f.unsigned_field("aux_sample_size", a.aux_sample_size);
  f.unsigned_field("sig_data", a.sig_data);
  // aux_action bits, printed by perf versions newer than 6.1.
  f.unsigned_field("aux_start_paused", a.aux_action & 1);
  f.unsigned_field("aux_pause", (a.aux_action >> 1) & 1);
  f.unsigned_field("aux_resume", (a.aux_action >> 2) & 1);
  return out;
}

// perf's clockid_name(): the first name its clock table gives an id.
const char* clockid_name(uint32_t id) {
  switch (id) {
    case 0: return "realtime";
    case 1: return "monotonic";
    case 4: return "monotonic_raw";
    case 7: return "boottime";
    case 11: return "tai";
    default: return "(not found)";
  }
}

// "0-23,32-199" for the set bits of a bitmap (perf's bitmap_scnprintf).
std::string bitmap_ranges(const std::vector<uint64_t>& words, uint64_t nbits) {
  std::string s;
  auto test = [&](uint64_t i) { return i < nbits && i / 64 < words.size() && ((words[i / 64] >> (i % 64)) & 1); };
  for (uint64_t i = 0; i < nbits;) {
    if (!test(i)) {
      ++i;
      continue;
    }
    uint64_t j = i;
    while (j + 1 < nbits && test(j + 1)) ++j;
    if (!s.empty()) s += ',';
    s += (i == j) ? fmt::format("{}", i) : fmt::format("{}-{}", i, j);
    i = j + 1;
  }
  return s;
}

// perf's unit_number__scnprintf: divide by 1024 while the quotient stays above 1.
std::string unit_number(uint64_t n) {
  static const char kUnits[] = "BKMG";
  int i = 0;
  while (n / 1024 > 1 && i < 3) {
    n /= 1024;
    ++i;
  }
  return fmt::format("{}{}", n, kUnits[i]);
}

class HeaderPrinter {
 public:
  HeaderPrinter(const Reader& reader, const HeaderFormatOptions& opt, Out& out) : r_(reader), f_(reader.features()),
                                                                          opt_(opt), out_(out) {}

  // The lines one feature contributes (perf's feat_ops[bit].print, or the "info available" line).
  void feature(unsigned bit) {
    if (bit == 0 || bit >= kPerfLastFeature) return;
    if (full_only(bit) && !opt_.full) {
      out_("# {} info available, use -I to display\n", feature_name(bit));
      return;
    }
    switch (bit) {
      case kFeatHostname: out_("# hostname : {}\n", f_.hostname); break;
      case kFeatOsrelease: out_("# os release : {}\n", f_.osrelease); break;
      case kFeatVersion: out_("# perf version : {}\n", f_.version); break;
      case kFeatArch: out_("# arch : {}\n", f_.arch); break;
      case kFeatNrcpus:
        out_("# nrcpus online : {}\n", f_.nr_cpus_online);
        out_("# nrcpus avail : {}\n", f_.nr_cpus_available);
        break;
      case kFeatCpudesc: out_("# cpudesc : {}\n", f_.cpudesc); break;
      case kFeatCpuid: out_("# cpuid : {}\n", f_.cpuid); break;
      case kFeatTotalMem: out_("# total memory : {} kB\n", f_.total_mem_kb); break;
      case kFeatCmdline: cmdline(); break;
      case kFeatEventDesc: event_desc(); break;
      case kFeatCpuTopology: cpu_topology(); break;
      case kFeatNumaTopology: numa_topology(); break;
      case kFeatBranchStack: out_("# contains samples with branch stack\n"); break;
      case kFeatPmuMappings: pmu_mappings(); break;
      case kFeatGroupDesc: group_desc(); break;
      case kFeatAuxtrace: out_("# contains AUX area data (e.g. instruction trace)\n"); break;
      case kFeatStat: out_("# contains stat data\n"); break;
      case kFeatCache: cache(); break;
      case kFeatSampleTime: sample_time(); break;
      case kFeatMemTopology: mem_topology(); break;
      case kFeatClockid: out_("# clockid frequency: {} MHz\n", f_.clockid_res_ns * 1000); break;
      case kFeatDirFormat: out_("# directory data version : {}\n", f_.dir_format_version); break;
      case kFeatCompressed:
        out_("# compressed : {}, level = {}, ratio = {}\n", f_.compressed.type == 1 ? "Zstd" : "Unknown",
             static_cast<int32_t>(f_.compressed.level), static_cast<int32_t>(f_.compressed.ratio));
        break;
      case kFeatCpuPmuCaps: pmu_caps_line("cpu", f_.cpu_pmu_caps); break;
      case kFeatClockData: clock_data(); break;
      case kFeatHybridTopology:
        out_("# hybrid cpu system:\n");
        for (const auto& [pmu, cpus] : f_.hybrid_topology) out_("# {} cpu list : {}\n", pmu, cpus);
        break;
      case kFeatPmuCaps:
        for (const auto& p : f_.pmu_caps) pmu_caps_line(p.pmu_name, p.caps);
        break;
      case kFeatBpfProgInfo: bpf_prog_info(); break;
      case kFeatBpfBtf:
        for (const BpfBtf* b : unique_by_id(f_.bpf_btfs)) out_("# btf info of id {}\n", b->id);
        break;
      default:
        // TRACING_DATA and BUILD_ID print nothing.
        break;
    }
  }

  // The names a pipe's events got as they arrived (HeaderFormatOptions::on_pipe_attrs).
  void set_arrived_names(std::vector<std::string> names) { arrived_names_ = std::move(names); }

  // A HEADER_FEATURE record of pipe mode. perf prints a feature only when it could process
  // it; an unreadable EVENT_DESC still gets its "not available" line.
  void pipe_feature(unsigned bit) {
    if (bit == 0 || bit >= kPerfLastFeature) return;
    if (!f_.parsed.test(bit) && bit != kFeatEventDesc) return;
    if (bit == kFeatTracingData || bit == kFeatBuildId) {
      out_("# {}\n", feature_name(bit));
      return;
    }
    feature(bit);
  }

 private:
  static bool full_only(unsigned bit) {
    return bit == kFeatCpuTopology || bit == kFeatNumaTopology || bit == kFeatCache || bit == kFeatMemTopology ||
           bit == kFeatHybridTopology;
  }

  // perf keeps BPF programs and BTF blobs in trees keyed by id: sorted, first one wins.
  template <typename T>
  static std::vector<const T*> unique_by_id(const std::vector<T>& items) {
    std::vector<const T*> out;
    for (const auto& it : items) out.push_back(&it);
    std::stable_sort(out.begin(), out.end(), [](const T* a, const T* b) { return a->id < b->id; });
    out.erase(std::unique(out.begin(), out.end(), [](const T* a, const T* b) { return a->id == b->id; }),
              out.end());
    return out;
  }

  // perf's synthesized program name: bpf_prog_<tag>[_<function name from BTF, or the
  // program's name, or "F" for a sub-program without BTF>].
  std::string bpf_prog_name(const BpfProgInfo& p, size_t sub) const {
    std::string name = "bpf_prog_";
    for (int i = 0; i < 8; ++i) name += fmt::format("{:02x}", (p.prog_tags[sub] >> (8 * i)) & 0xff);
    const BpfBtf* btf = nullptr;
    if (p.btf_id) {
      for (const auto& b : f_.bpf_btfs) {
        if (b.id == p.btf_id) {
          btf = &b;
          break;
        }
      }
      if (btf && !btf_type_name(btf->data, 0)) btf = nullptr;  // not valid BTF: as if absent
    }
    std::optional<std::string> short_name;
    if (btf) {
      if (sub < p.func_type_ids.size()) short_name = btf_type_name(btf->data, p.func_type_ids[sub]);
    } else if (sub == 0 && p.nr_jited_ksyms == 1) {
      if (!p.name.empty()) short_name = p.name;
    } else {
      short_name = "F";
    }
    if (short_name) name += "_" + *short_name;
    return name;
  }

  void bpf_prog_info() {
    for (const BpfProgInfo* p : unique_by_id(f_.bpf_progs)) {
      uint32_t n = p->nr_jited_ksyms;
      if (n != p->nr_prog_tags || n != p->nr_jited_func_lens) continue;
      // perf reads the arrays unchecked; without them there is nothing to print.
      if (p->jited_ksyms.size() < n || p->jited_func_lens.size() < n || p->prog_tags.size() < n) continue;
      if (n == 1) {
        out_("# bpf_prog_info {}: {} addr {:#x} size {}\n", p->id, bpf_prog_name(*p, 0), p->jited_ksyms[0],
             p->jited_func_lens[0]);
        continue;
      }
      out_("# bpf_prog_info {}:\n", p->id);
      for (uint32_t i = 0; i < n; ++i) {
        out_("# \tsub_prog {}: {} addr {:#x} size {}\n", i, bpf_prog_name(*p, i), p->jited_ksyms[i],
             p->jited_func_lens[i]);
      }
    }
  }

  void cmdline() {
    std::string line = "# cmdline : ";
    for (const auto& arg : f_.cmdline) {
      for (char c : arg) {
        if (c == '\'') {
          line += "\\'";
        } else {
          line += c;
        }
      }
      line += ' ';
    }
    out_("{}\n", line);
  }

  void event_desc() {
    if (!f_.parsed.test(kFeatEventDesc)) {
      out_("# event desc: not available or unable to read\n");
      return;
    }
    for (const auto& e : f_.event_desc) {
      // perf's list of events ends at the first attr whose size field is 0.
      if (e.attr.size == 0) break;
      std::string line = fmt::format("# event : name = {}, ", e.name);
      if (!e.ids.empty()) {
        line += ", id = {";
        for (size_t i = 0; i < e.ids.size(); ++i) line += fmt::format("{} {}", i ? "," : "", e.ids[i]);
        line += " }";
      }
      line += format_attr_fields(e.attr);
      out_("{}\n", line);
    }
  }

  void cpu_topology() {
    const auto& t = f_.cpu_topology;
    for (const auto& s : t.core_siblings) out_("# sibling sockets : {}\n", s);
    if (!t.die_siblings.empty()) {
      for (const auto& s : t.die_siblings) out_("# sibling dies    : {}\n", s);
    }
    for (const auto& s : t.thread_siblings) out_("# sibling threads : {}\n", s);
    if (!t.die_siblings.empty()) {
      if (!t.cpus.empty()) {
        for (size_t i = 0; i < t.cpus.size(); ++i) {
          out_("# CPU {}: Core ID {}, Die ID {}, Socket ID {}\n", i, static_cast<int32_t>(t.cpus[i].core_id),
               static_cast<int32_t>(t.cpus[i].die_id), static_cast<int32_t>(t.cpus[i].socket_id));
        }
      } else {
        out_("# Core ID, Die ID and Socket ID information is not available\n");
      }
    } else if (!t.cpus.empty()) {
      for (size_t i = 0; i < t.cpus.size(); ++i) {
        out_("# CPU {}: Core ID {}, Socket ID {}\n", i, static_cast<int32_t>(t.cpus[i].core_id),
             static_cast<int32_t>(t.cpus[i].socket_id));
      }
    } else {
      out_("# Core ID and Socket ID information is not available\n");
    }
  }

  void numa_topology() {
    for (const auto& n : f_.numa_topology) {
      out_("# node{} meminfo  : total = {} kB, free = {} kB\n", n.node, n.mem_total, n.mem_free);
      out_("# node{} cpu list : {}\n", n.node, n.cpus);
    }
  }

  void pmu_mappings() {
    if (f_.pmu_mappings.empty()) {
      out_("# pmu mappings: not available\n");
      return;
    }
    std::string line = "# pmu mappings: ";
    for (size_t i = 0; i < f_.pmu_mappings.size(); ++i) {
      line += fmt::format("{}{} = {}", i ? ", " : "", f_.pmu_mappings[i].second, f_.pmu_mappings[i].first);
    }
    out_("{}\n", line);
  }

  // perf rebuilds leader/member links on its event list from GROUP_DESC, then prints the
  // groups from that list; a description that does not fit the list stops the rebuild where
  // it breaks, and the printing follows whatever links were made (lines can run together).
  void group_desc() {
    const auto& attrs = r_.attrs();
    size_t n = attrs.size();
    std::vector<size_t> leader(n);
    std::vector<uint32_t> nr_members(n, 1);
    std::vector<std::string> group_name(n);
    for (size_t i = 0; i < n; ++i) leader[i] = i;
    const auto& desc = f_.group_desc;
    size_t gi = 0, cur = 0;
    uint32_t left = 0;
    for (size_t i = 0; i < n; ++i) {
      if (gi < desc.size() && desc[gi].leader_idx == i) {
        leader[i] = i;
        if (desc[gi].name != "{anon_group}") group_name[i] = desc[gi].name;
        nr_members[i] = desc[gi].nr_members;
        if (left > 0) break;
        cur = i;
        left = desc[gi].nr_members - 1;
        ++gi;
      } else if (left) {
        leader[i] = cur;
        --left;
      }
    }
    // The name the event has when the feature comes (see HeaderFormatOptions::named_on_arrival).
    auto name = [&](size_t i) {
      const bool early = i < arrived_names_.size() && !arrived_names_[i].empty();
      return early && !attrs[i].named_by_update ? arrived_names_[i] : attrs[i].name;
    };
    uint32_t nr = 0;
    std::string text;
    for (size_t i = 0; i < n; ++i) {
      if (leader[i] == i && nr_members[i] > 1) {
        text += fmt::format("# group: {}{{{}", group_name[i], name(i));
        nr = nr_members[i] - 1;
      } else if (nr) {
        text += fmt::format(",{}", name(i));
        if (--nr == 0) text += "}\n";
      }
    }
    out_("{}", text);
  }

  void cache() {
    out_("# CPU cache info:\n");
    for (const auto& c : f_.caches) out_("#  L{} {:<15} {:>8} [{}]\n", c.level, c.type, c.size, c.map);
  }

  static std::string usec_time(uint64_t ns) { return fmt::format("{}.{:06}", ns / 1000000000, ns % 1000000000 / 1000); }

  void sample_time() {
    out_("# time of first sample : {}\n", usec_time(f_.first_sample_time));
    out_("# time of last sample : {}\n", usec_time(f_.last_sample_time));
    double ms = static_cast<double>(f_.last_sample_time - f_.first_sample_time) / 1e6;
    out_("# sample duration : {:10.3f} ms\n", ms);
  }

  void mem_topology() {
    const auto& m = f_.mem_topology;
    out_("# memory nodes (nr {}, block size {:#x}):\n", m.nodes.size(), m.block_size);
    for (const auto& n : m.nodes) {
      uint64_t weight = 0;
      for (uint64_t i = 0; i < n.nbits; ++i) {
        if (i / 64 < n.bitmap.size() && ((n.bitmap[i / 64] >> (i % 64)) & 1)) ++weight;
      }
      out_("#  {:3} [{}]: {}\n", n.node, unit_number(m.block_size * weight), bitmap_ranges(n.bitmap, n.nbits));
    }
  }

  void pmu_caps_line(const std::string& pmu, const std::vector<std::pair<std::string, std::string>>& caps) {
    if (caps.empty()) {
      out_("# {} pmu capabilities: not available\n", pmu);
      return;
    }
    std::string line = fmt::format("# {} pmu capabilities: ", pmu);
    for (size_t i = 0; i < caps.size(); ++i) line += fmt::format("{}{}={}", i ? ", " : "", caps[i].first, caps[i].second);
    out_("{}\n", line);
  }

  void clock_data() {
    if (!f_.parsed.test(kFeatClockData)) {
      out_("# reference time disabled\n");
      return;
    }
    const auto& c = f_.clock_data;
    time_t tod_sec = static_cast<time_t>(c.wall_clock_ns / 1000000000);
    uint64_t tod_usec = c.wall_clock_ns % 1000000000 / 1000;
    std::string tstr = "<error>";
    struct tm tm {};
    if (localtime_r(&tod_sec, &tm)) {
      char date[64];
      std::strftime(date, sizeof date, "%F %T", &tm);
      tstr = fmt::format("{}.{:06}", date, tod_usec);
    }
    const char* name = clockid_name(c.clockid);
    out_("# clockid: {} ({})\n", name, c.clockid);
    out_("# reference time: {} = {}.{:06} (TOD) = {}.{:09} ({})\n", tstr, static_cast<int64_t>(tod_sec), tod_usec,
         c.clockid_ns / 1000000000, c.clockid_ns % 1000000000, name);
  }

  const Reader& r_;
  const Features& f_;
  const HeaderFormatOptions& opt_;
  std::vector<std::string> arrived_names_;
  Out& out_;
};

// The file whose mtime perf shows as "captured on": the input, the header file of a
// directory, or standard input.
time_t capture_time(const Reader& reader, const std::string& input) {
  struct stat st {};
  int rc;
  if (input == "-") {
    rc = fstat(STDIN_FILENO, &st);
  } else if (reader.is_directory()) {
    rc = stat((reader.path() + "/data").c_str(), &st);
  } else {
    rc = stat(reader.path().c_str(), &st);
  }
  return rc == 0 ? st.st_mtime : 0;
}

void print_extras(const Reader& reader, Out& out, const std::string& error) {
  const auto& st = reader.stats();
  out("# ======== tperf ========\n");
  out("# records by type:\n");
  for (uint32_t t = 0; t < st.by_type.size(); ++t) {
    if (st.by_type[t]) out("#   {:<20} {:>12}  (type {})\n", record_type_name(t), st.by_type[t], t);
  }
  for (const auto& [t, n] : st.other_types) out("#   {:<20} {:>12}  (type {})\n", record_type_name(t), n, t);
  out("#   {:<20} {:>12}\n", "total", st.records);
  out("# unknown record types : {}\n", st.unknown_records);
  if (st.compressed_bytes) {
    out("# compressed data      : {} bytes unpacked to {} bytes\n", st.compressed_bytes, st.decompressed_bytes);
  }
  // Feature bits tperf does not decode; the empty end-of-features marker of pipe mode is not one.
  const auto& f = reader.features();
  std::string unknown;
  for (unsigned bit = 0; bit < kFeatBits; ++bit) {
    if (!reader.header().features.test(bit) && !f.has(bit)) continue;
    if (feature_known(bit)) continue;
    auto raw = f.raw.find(bit);
    if (reader.is_pipe() && bit >= kPerfLastFeature && (raw == f.raw.end() || raw->second.empty())) continue;
    size_t size = raw == f.raw.end() ? 0 : raw->second.size();
    unknown += fmt::format(" {} ({} bytes)", feature_name(bit), size);
  }
  out("# features kept raw    :{}\n", unknown.empty() ? " none" : unknown);
  size_t nwarn = f.warnings.size() + reader.warnings().size() + (error.empty() ? 0 : 1);
  out("# warnings             : {}\n", nwarn);
  for (const auto& w : f.warnings) out("#   {}\n", w);
  for (const auto& w : reader.warnings()) out("#   {}\n", w);
  if (!error.empty()) out("#   error: {}\n", error);
}

}  // namespace

std::string print_header(Reader& reader, const std::string& input, const HeaderFormatOptions& opt) {
  Out out;
  HeaderPrinter printer(reader, opt, out);
  const FileHeader& h = reader.header();
  bool pipe = reader.is_pipe();

  if (opt.block) {
    out("# ========\n");
    out("# captured on    : {}\n", ctime_string(capture_time(reader, input)));
    out("# header version : 1\n");
    out("# data offset    : {}\n", pipe ? 0 : h.data.offset);
    out("# data size      : {}\n", pipe ? 0 : h.data.size);
    out("# feat offset    : {}\n", pipe ? 0 : h.data.offset + h.data.size);
    if (!pipe) {
      for (unsigned bit = 1; bit < kPerfLastFeature; ++bit) {
        if (h.features.test(bit)) printer.feature(bit);
      }
      std::string missing;
      for (unsigned bit = 1; bit < kPerfLastFeature; ++bit) {
        if (!h.features.test(bit)) missing += feature_name(bit) + " ";
      }
      out("# missing features: {}\n", missing);
    }
    out("# ========\n#\n");
    out.flush();
  }

  // Pipe mode: the features arrive as records, perf prints each as it is processed. The records
  // are read for them and for tperf's counts; a file's only when `file_records` asks.
  std::string error;
  if (pipe ? !opt.pipe_features && opt.no_extras : !opt.file_records) return error;
  Record rec;
  bool attrs_done = false;
  try {
    while (reader.next(rec)) {
      if (pipe && !attrs_done && rec.type != kRecordHeaderAttr) {
        attrs_done = true;
        if (opt.on_pipe_attrs) {
          ArrivedEventNames arrived = opt.on_pipe_attrs(reader.attrs());
          if (!arrived.error.empty()) {
            error = arrived.error;
            break;
          }
          printer.set_arrived_names(std::move(arrived.names));
        }
      }
      if (pipe && opt.pipe_features && rec.type == kRecordHeaderFeature && rec.body().size() >= 8) {
        uint64_t bit = load<uint64_t>(rec.body().data(), reader.swapped());
        if (bit < kFeatBits) printer.pipe_feature(static_cast<unsigned>(bit));
      }
    }
  } catch (const FormatError& e) {
    error = e.what();
  }
  if (!opt.no_extras) print_extras(reader, out, error);
  out.flush();
  return error;
}


}  // namespace tperf::output
