// Memory samples (DATA_SRC, WEIGHT / WEIGHT_STRUCT, PHYS_ADDR, DATA_PAGE_SIZE), as a `perf mem
// record` on a PMU with memory sampling writes them, against perf 6.1 reading the same bytes:
// script's default and -F lines (the `|OP ..|LVL ..|SNP ..|TLB ..|LCK ..|BLK ..` decoding and the
// weight columns) and report --mem-mode with its sort keys. This machine has no such PMU, so the
// files are made with our writer: mmaps of /usr/bin/bash (its text for the sample ips, its data
// and bss for the data addresses), a heap and a stack, and data_src values of loads and stores
// that hit L1/L2/L3/RAM, remote caches and memory, snoops that hit and hit modified lines, TLB
// hits and misses, locked and blocked accesses.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "e2e/recording_util.h"
#include "perfdata/record_builder.h"
#include "perfdata/writer.h"
#include "test_util.h"

namespace tperf::test::e2e {
namespace {

using namespace tperf::perfdata;

constexpr uint64_t kBash = 0x555555554000, kHeap = 0x555555700000, kStack = 0x7ffffffde000;
constexpr int32_t kPid = 4242;

// perf_mem_data_src, field by field (include/uapi/linux/perf_event.h).
struct Src {
  uint64_t op = 0, lvl = 0, snoop = 0, lock = 0, dtlb = 0, lvl_num = 0, remote = 0, snoopx = 0, blk = 0, hops = 0;
  uint64_t value() const {
    return op | lvl << 5 | snoop << 19 | lock << 24 | dtlb << 26 | lvl_num << 33 | remote << 37 | snoopx << 38 |
           blk << 40 | hops << 43;
  }
};
// Bits of each field.
constexpr uint64_t kOpNa = 1, kOpLoad = 2, kOpStore = 4, kOpPfetch = 8;
constexpr uint64_t kLvlNa = 1, kLvlHit = 2, kLvlMiss = 4, kLvlL1 = 8, kLvlLfb = 0x10, kLvlL2 = 0x20, kLvlL3 = 0x40,
                   kLvlLocRam = 0x80, kLvlRemRam1 = 0x100, kLvlRemRam2 = 0x200, kLvlRemCce1 = 0x400,
                   kLvlUnc = 0x2000;
constexpr uint64_t kSnpNa = 1, kSnpNone = 2, kSnpHit = 4, kSnpMiss = 8, kSnpHitm = 0x10;
constexpr uint64_t kLockNa = 1, kLocked = 2;
constexpr uint64_t kTlbNa = 1, kTlbHit = 2, kTlbMiss = 4, kTlbL1 = 8, kTlbL2 = 0x10, kTlbWalk = 0x20;
constexpr uint64_t kLvlNumL2 = 2, kLvlNumL3 = 3, kLvlNumAnyCache = 0xb, kLvlNumRam = 0xd, kLvlNumPmem = 0xe;
constexpr uint64_t kBlkNa = 1, kBlkData = 2, kBlkAddr = 4;

// The data_src values of the files: what Intel (PEBS), AMD (IBS), ARM (SPE) and POWER write.
std::vector<uint64_t> data_sources() {
  std::vector<Src> v = {
      {.op = kOpLoad, .lvl = kLvlHit | kLvlL1, .snoop = kSnpNone, .lock = kLockNa, .dtlb = kTlbHit | kTlbL1},
      {.op = kOpLoad, .lvl = kLvlHit | kLvlLfb, .snoop = kSnpNone, .dtlb = kTlbHit | kTlbL1 | kTlbL2},
      {.op = kOpLoad, .lvl = kLvlHit | kLvlL2, .snoop = kSnpNone, .lock = kLockNa, .dtlb = kTlbMiss | kTlbL2},
      {.op = kOpLoad, .lvl = kLvlHit | kLvlL3, .snoop = kSnpHit, .lock = kLocked, .dtlb = kTlbHit | kTlbL1},
      {.op = kOpLoad, .lvl = kLvlHit | kLvlL3, .snoop = kSnpHitm, .dtlb = kTlbMiss | kTlbWalk},
      {.op = kOpLoad, .lvl = kLvlMiss | kLvlL3, .snoop = kSnpMiss, .dtlb = kTlbNa},
      {.op = kOpLoad, .lvl = kLvlHit | kLvlLocRam, .snoop = kSnpMiss, .lock = kLocked, .dtlb = kTlbMiss | kTlbWalk},
      {.op = kOpLoad, .lvl = kLvlHit | kLvlRemRam1, .snoop = kSnpHit, .dtlb = kTlbHit | kTlbL2},
      {.op = kOpLoad, .lvl = kLvlHit | kLvlRemRam2, .snoop = kSnpNa, .dtlb = kTlbHit},
      {.op = kOpLoad, .lvl = kLvlHit | kLvlRemCce1, .snoop = kSnpHitm, .lock = kLocked, .dtlb = kTlbL1 | kTlbL2},
      {.op = kOpLoad, .lvl = kLvlHit | kLvlUnc, .snoop = kSnpNone, .blk = kBlkData},
      {.op = kOpLoad, .lvl = kLvlHit | kLvlL1, .snoop = kSnpNone, .dtlb = kTlbHit | kTlbL1, .blk = kBlkAddr},
      {.op = kOpLoad, .lvl = kLvlHit | kLvlL2, .blk = kBlkData | kBlkAddr},
      {.op = kOpStore, .lvl = kLvlHit | kLvlL1, .dtlb = kTlbHit | kTlbL1},
      {.op = kOpStore, .lvl = kLvlMiss | kLvlL1, .lock = kLocked, .dtlb = kTlbMiss | kTlbL1},
      {.op = kOpStore, .lvl = kLvlNa},
      {.op = kOpPfetch, .lvl = kLvlMiss | kLvlL2, .snoop = kSnpHit},
      {.op = kOpNa, .lvl = kLvlNa, .snoop = kSnpNa, .lock = kLockNa, .dtlb = kTlbNa, .blk = kBlkNa},
      {},
      // Level numbers (lvl_num), remote, hops and the forwarded snoop (AMD, ARM, POWER).
      {.op = kOpLoad, .lvl = kLvlHit, .snoop = kSnpNone, .lvl_num = kLvlNumL2},
      {.op = kOpLoad, .lvl = kLvlHit | kLvlL3, .snoop = kSnpHit, .lvl_num = kLvlNumL3, .remote = 1, .hops = 1},
      {.op = kOpLoad, .lvl = kLvlMiss, .lvl_num = kLvlNumPmem, .remote = 1},
      {.op = kOpLoad, .lvl = kLvlMiss, .snoop = kSnpNone, .lvl_num = kLvlNumRam, .remote = 1, .snoopx = 1, .hops = 2},
      {.op = kOpLoad, .lvl = kLvlHit, .lvl_num = kLvlNumAnyCache, .hops = 3},
      {.op = kOpLoad, .lvl = kLvlHit | kLvlL1 | kLvlL2, .snoop = kSnpHit | kSnpHitm, .dtlb = kTlbHit | kTlbL1 | kTlbWalk},
      {.op = kOpLoad, .lvl = kLvlHit | kLvlL3, .lvl_num = kLvlNumL3},
      {.op = kOpLoad, .lvl = kLvlNa, .lvl_num = 0xf},
      {.op = kOpLoad, .lvl = kLvlHit},
      {.op = kOpLoad, .lvl = kLvlMiss, .remote = 1},
      {.op = kOpStore, .lvl = kLvlHit, .lvl_num = 1, .hops = 4},
      {.op = kOpLoad | kOpStore, .lvl = kLvlNa | kLvlHit, .snoop = kSnpNa | kSnpNone, .lock = kLockNa | kLocked},
  };
  std::vector<uint64_t> out;
  for (const Src& s : v) out.push_back(s.value());
  return out;
}

// name -> address of a binary's dynamic symbols whose nm type letter is in `types` (the
// binaries of a distribution are stripped of .symtab; perf reads .dynsym then).
std::map<std::string, uint64_t> dynamic_symbols(const std::string& binary, const std::string& types) {
  std::map<std::string, uint64_t> out;
  CommandResult r = run("nm -D --defined-only " + shell_quote(binary));
  std::istringstream in(r.out);
  std::string addr, type, name;
  while (in >> addr >> type >> name) {
    if (type.size() == 1 && types.find(type[0]) != std::string::npos) {
      out[name.substr(0, name.find('@'))] = std::stoull(addr, nullptr, 16);
    }
  }
  return out;
}

struct MemFile {
  std::string path;
  size_t samples = 0;
};

// `weight_struct`: WEIGHT_STRUCT (weight, ins_lat) instead of WEIGHT.
// `swap`: the other byte order; `zstd`: compressed data.
MemFile write_mem_file(const TempDir& dir, const std::string& name, bool pipe, bool weight_struct, bool swap = false,
                       bool zstd = false) {
  const auto text = dynamic_symbols("/usr/bin/bash", "Tt");
  const auto data = dynamic_symbols("/usr/bin/bash", "BbDd");
  PerfEventAttr attr;
  attr.type = kTypeRaw;
  attr.size = kAttrSizeVer7;
  attr.config = 0x1cd;
  attr.config1 = 30;
  attr.sample_period = 4000;
  attr.flags |= uint64_t{2} << kFlagPreciseIp0;
  attr.sample_type = kSampleIp | kSampleTid | kSampleTime | kSampleAddr | kSampleId | kSampleCpu | kSamplePeriod |
                     kSampleDataSrc | kSamplePhysAddr | kSampleDataPageSize |
                     (weight_struct ? kSampleWeightStruct : kSampleWeight);
  for (AttrFlagBit f : {kFlagSampleIdAll, kFlagMmap, kFlagComm, kFlagTask, kFlagMmap2, kFlagCommExec, kFlagMmapData}) {
    attr.set_flag(f);
  }
  RecordBuilder rb(attr, swap);
  std::vector<std::vector<uint8_t>> records;
  uint64_t now = 1'000'000'000;
  auto sid = [&] {
    SampleId s;
    s.pid = s.tid = kPid;
    s.time = now += 1000;
    s.id = 7;
    return s;
  };
  CommEvent comm;
  comm.pid = comm.tid = kPid;
  comm.comm = "memtest";
  comm.exec = true;
  records.push_back(rb.comm(comm, sid()));
  auto map = [&](uint64_t addr, uint64_t len, uint64_t pgoff, uint32_t prot, const std::string& file) {
    Mmap2Event m;
    m.pid = m.tid = kPid;
    m.addr = addr;
    m.len = len;
    m.pgoff = pgoff;
    m.prot = prot;
    m.filename = file;
    records.push_back(rb.mmap2(m, sid()));
  };
  map(kBash + 0x2f000, 0xc1000, 0x2f000, 5, "/usr/bin/bash");
  map(kBash + 0x128000, 0x17000, 0x128000, 3, "/usr/bin/bash");
  map(kHeap, 0x21000, 0, 3, "[heap]");
  map(kStack, 0x21000, 0, 3, "[stack]");
  // Code and data addresses the samples take turns on.
  std::vector<uint64_t> ips, addrs;
  for (const char* f : {"_getenv", "sh_xmalloc", "hash_search", "make_word", "execute_command"}) {
    if (text.count(f)) ips.push_back(kBash + text.at(f) + 0x10);
  }
  for (const char* d : {"EOF_Reached", "SB", "__environ", "shell_variables", "the_printed_command"}) {
    if (data.count(d)) addrs.push_back(kBash + data.at(d) + 4);
  }
  addrs.push_back(kHeap + 0x2a8);
  addrs.push_back(kStack + 0x20f58);
  addrs.push_back(0x7f1234567000);  // no map
  const std::vector<uint64_t> sources = data_sources();
  MemFile out;
  for (size_t i = 0; i < 3 * sources.size(); ++i) {
    Sample s;
    s.pid = s.tid = kPid;
    s.time = now += 1000;
    s.id = 7;
    s.cpu = static_cast<uint32_t>(i % 2);
    s.period = 4000;
    s.ip = ips.empty() ? kBash + 0x30000 : ips[i % ips.size()];
    s.addr = addrs[(i * 3) % addrs.size()];
    s.data_src = sources[i % sources.size()];
    const uint64_t weight = 30 + (i * 37) % 400;
    s.weight = weight_struct ? (weight | uint64_t{(i * 13) % 50} << 32) : weight;
    s.phys_addr = s.addr == 0x7f1234567000 ? 0 : 0x10a000000 + (s.addr & 0xfffff);
    s.data_page_size = s.addr >= kStack ? 4096 : (i % 5 == 0 ? 2 << 20 : 4096);
    records.push_back(rb.sample(s, kMiscUser));
    ++out.samples;
  }
  out.path = dir.file(name);
  Writer::Options o;
  o.pipe = pipe;
  o.swap = swap;
  if (zstd) o.compression_level = 3;
  Writer w(o);
  w.open(out.path);
  w.add_attr(attr, {7}, "cpu/mem-loads,ldlat=30/P");
  for (const auto& r : records) w.write_record(r);
  w.finish();
  if (const char* keep = getenv("TPERF_MEM_FILES")) run(fmt::format("cp {} {}/", shell_quote(out.path), keep));
  return out;
}

struct Layout {
  const char* name;
  bool pipe;
  bool weight_struct;
  bool swap = false;
  bool zstd = false;
};
constexpr Layout kLayouts[] = {{"mem.data", false, false},        {"mem-pipe.data", true, false},
                               {"mem-ws.data", false, true},      {"mem-ws-pipe.data", true, true},
                               {"mem-be.data", false, true, true}, {"mem-zstd-pipe.data", true, false, false, true}};

TEST(MemSamplesE2E, ScriptAsPerf) {
  TPERF_REQUIRE_PROGRAM("perf");
  TempDir dir;
  for (const Layout& l : kLayouts) {
    const MemFile f = write_mem_file(dir, l.name, l.pipe, l.weight_struct, l.swap, l.zstd);
    ASSERT_EQ(f.samples, 3 * data_sources().size());
    for (std::string fields :
         {"", "-F addr,data_src,weight,phys_addr,data_page_size", "-F ip,sym,addr,data_src,weight,ins_lat",
          "-F comm,tid,cpu,time,event,ip,sym,dso,addr,data_src,weight,phys_addr,data_page_size",
          "-F +data_src,+weight", "-F data_src", "-F ip,data_src,sym,symoff,dso"}) {
      if (fields.find("ins_lat") != std::string::npos && !l.weight_struct) continue;  // perf refuses it
      SCOPED_TRACE(std::string(l.name) + " " + fields);
      const std::string input = l.pipe ? fmt::format("- < {}", shell_quote(f.path)) : shell_quote(f.path);
      ComparedOutputs c =
          compare_outputs(fmt::format("perf script -i {} {} 2>/dev/null", input, fields),
                          fmt::format("{} script -i {} {}", TPERF_BINARY, input, fields), f.path);
      EXPECT_EQ(c.diff, "") << "diff perf tperf; kept in " << c.kept;
      EXPECT_EQ(c.perf_lines, f.samples) << "perf printed another number of lines";
      EXPECT_EQ(c.tperf_status, 0) << c.tperf_err;
    }
  }
}

TEST(MemSamplesE2E, ReportMemModeAsPerf) {
  TPERF_REQUIRE_PROGRAM("perf");
  TempDir dir;
  for (const Layout& l : kLayouts) {
    const MemFile f = write_mem_file(dir, l.name, l.pipe, l.weight_struct, l.swap, l.zstd);
    for (std::string args :
         {"--mem-mode", "--mem-mode -n", "--mem-mode --sort mem", "--mem-mode --sort symbol_daddr",
          "--mem-mode --sort dso_daddr,tlb", "--mem-mode --sort snoop,locked,blocked", "--mem-mode --sort blocked,snoop",
          "--mem-mode --sort local_weight,weight,mem", "--mem-mode -n --sort mem,sym", "--mem-mode --sort mem,dso",
          "--mem-mode --sort mem,locked", "--mem-mode --sort sym,symbol_daddr,dso_daddr",
          "--mem-mode --sort ins_lat,local_ins_lat,comm", "", "-n --sort sym,local_weight",
          "--mem-mode -F overhead,sample,mem,tlb", "--mem-mode -F overhead,period,snoop,sym",
          "--mem-mode -F overhead,dso_daddr,sample"}) {
      // Without WEIGHT_STRUCT perf shows no entry by instruction latency.
      if (args.find("ins_lat,") != std::string::npos && !l.weight_struct) continue;
      SCOPED_TRACE(std::string(l.name) + " " + args);
      const std::string input = l.pipe ? fmt::format("- < {}", shell_quote(f.path)) : shell_quote(f.path);
      ComparedOutputs c = compare_outputs(
          fmt::format("perf report --stdio -i {} {} 2>/dev/null | grep -v '^#' | grep -v '^$'", input, args),
          fmt::format("{} report --stdio --no-unwind-summary -i {} {} 2>/dev/null | grep -v '^#' | grep -v '^$'",
                      TPERF_BINARY, input, args),
          f.path);
      EXPECT_EQ(c.diff, "") << "diff perf tperf; kept in " << c.kept;
      EXPECT_GE(c.perf_lines, 2u) << "perf printed too little";
    }
    // -q: the whole output, blank lines included.
    for (std::string args : {"-q --mem-mode", "-q --sort sym,local_weight"}) {
      SCOPED_TRACE(std::string(l.name) + " " + args);
      const std::string input = l.pipe ? fmt::format("- < {}", shell_quote(f.path)) : shell_quote(f.path);
      ComparedOutputs c = compare_outputs(fmt::format("perf report --stdio -i {} {} 2>/dev/null", input, args),
                                          fmt::format("{} report --stdio -i {} {}", TPERF_BINARY, input, args), f.path);
      EXPECT_EQ(c.diff, "") << "diff perf tperf; kept in " << c.kept;
      EXPECT_GE(c.perf_lines, f.samples / 2) << "perf printed too little";
    }
  }
}

// Samples without data sources: perf reads a pipe in --mem-mode (every field N/A, a sample of
// weight 0 counting 1, the ipc_null key telling symbols apart) and refuses a file with one line
// and status 0.
TEST(MemSamplesE2E, RecordingWithoutDataSource) {
  TPERF_REQUIRE_PERF();
  TempDir dir;
  const std::string pipe = dir.file("pipe.data"), file = dir.file("file.data");
  for (const std::string& out : {pipe, file}) {
    CommandResult rec = run(fmt::format("timeout 60 perf record -q -e task-clock -o {} -- ls -R /usr/share/doc > {}",
                                        out == pipe ? "-" : shell_quote(out), out == pipe ? shell_quote(out) : "/dev/null"));
    ASSERT_EQ(rec.status, 0) << "set-up failed: perf record: " << rec.err;
  }
  for (std::string args : {"--mem-mode", "--mem-mode -n --sort mem,sym", "--mem-mode --sort symbol_daddr,dso"}) {
    SCOPED_TRACE(args);
    ComparedOutputs c = compare_outputs(
        fmt::format("perf report --stdio {} -i - < {} 2>/dev/null | grep -v '^# (Tip' | grep -v '^#$' | grep -v '^$'",
                    args, shell_quote(pipe)),
        fmt::format("{} report --stdio {} -i - < {} 2>/dev/null | grep -v '^#$' | grep -v '^$'", TPERF_BINARY, args,
                    shell_quote(pipe)),
        pipe);
    EXPECT_EQ(c.diff, "") << "diff perf tperf; kept in " << c.kept;
    EXPECT_GE(c.perf_lines, 8u) << "perf printed too little";
  }
  CommandResult p = run(fmt::format("perf report --stdio --mem-mode -i {}", shell_quote(file)));
  CommandResult t = run(fmt::format("{} report --stdio --mem-mode -i {}", TPERF_BINARY, shell_quote(file)));
  EXPECT_EQ(t.status, p.status);
  EXPECT_EQ(t.out, p.out);
  EXPECT_NE(t.err.find("Selected --mem-mode but no mem data."), std::string::npos) << t.err;
}

}  // namespace
}  // namespace tperf::test::e2e
