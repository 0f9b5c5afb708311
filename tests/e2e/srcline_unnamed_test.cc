// srcline of an address where addr2line names no function: perf takes addr2line's "??" answer
// for a failure and prints "<dso>[<offset>]" in script's srcline field (and the symbol + offset
// or the same in report's srcline key), while an address addr2line can name from the file's
// symbols but has no line for gives "??:0" (nothing in script), unless it names the file from the
// symbol table (a local function after an STT_FILE symbol: "crtstuff.c:0"). A file made with our
// writer with samples in the PLT and in functions of real binaries, against perf 6.1.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
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

// A section's sh_addr, sh_offset and sh_size, from readelf; all 0 when the file has none.
struct SectionPlace {
  uint64_t addr = 0, offset = 0, size = 0;
};
SectionPlace section_of(const std::string& file, const std::string& name) {
  std::istringstream in(run_command(fmt::format("readelf -SW {} 2>/dev/null", shell_quote(file))));
  std::string line;
  while (std::getline(in, line)) {
    // "  [13] .plt   PROGBITS   000000000002f020 02f020 000de0 10  AX  0   0 16"
    size_t close = line.find("] ");
    if (close == std::string::npos) continue;
    std::istringstream fields(line.substr(close + 2));
    std::string sec, type, addr, off, size;
    fields >> sec >> type >> addr >> off >> size;
    if (sec == name) {
      return {std::strtoull(addr.c_str(), nullptr, 16), std::strtoull(off.c_str(), nullptr, 16),
              std::strtoull(size.c_str(), nullptr, 16)};
    }
  }
  return {};
}

TEST(SrclineUnnamed, PltAndUnnamedCodeAsPerf) {
  TPERF_REQUIRE_PROGRAM("perf");
  TPERF_REQUIRE_PROGRAM("readelf");
  std::string err;
  const std::string workload_bin = workload("forkexec", &err);
  ASSERT_FALSE(workload_bin.empty()) << "set-up failed: " << err;
  // A program with DWARF and a .symtab (ours) and one with only a .dynsym (the system's bash,
  // whose PLT perf shows as bash[...]).
  std::vector<std::string> binaries = {workload_bin};
  if (std::filesystem::exists("/usr/bin/bash")) binaries.push_back("/usr/bin/bash");

  const PerfEventAttr attr = test::cpu_clock_attr(kSampleIp | kSampleTid | kSampleTime | kSamplePeriod);
  RecordBuilder rb(attr);
  TempDir dir;
  const std::string path = dir.file("unnamed.data");
  Writer w;
  w.open(path);
  w.add_attr(attr, {1}, "cpu-clock");
  uint64_t now = 1000;
  int32_t pid = 500;
  size_t plt_samples = 0;
  for (const auto& bin : binaries) {
    ++pid;
    SampleId sid;
    sid.pid = sid.tid = pid;
    sid.time = ++now;
    CommEvent comm;
    comm.pid = comm.tid = pid;
    comm.comm = "unnamed";
    w.write_record(rb.comm(comm, sid));
    const uint64_t base = 0x560000000000ULL;
    Mmap2Event m;
    m.pid = m.tid = pid;
    m.addr = base;
    m.len = (std::filesystem::file_size(bin) + 0xfff) & ~0xfffULL;  // the whole file, offset = address
    m.prot = 5;
    m.filename = bin;
    sid.time = ++now;
    w.write_record(rb.mmap2(m, sid));
    std::vector<uint64_t> offsets;
    for (const char* sec : {".plt", ".plt.sec", ".plt.got"}) {
      const SectionPlace plt = section_of(bin, sec);
      if (plt.size >= 0x20) offsets.push_back(plt.offset + 0x10), ++plt_samples;
    }
    const SectionPlace text_section = section_of(bin, ".text");
    const uint64_t text = text_section.offset, text_size = text_section.size;
    ASSERT_GT(text_size, 0x80u) << bin;
    // The start of .text (below its first symbol in bash's .dynsym), and two addresses inside
    // functions.
    for (uint64_t o : {uint64_t{0}, text_size / 2, text_size - 0x10}) offsets.push_back(text + o);
    if (bin == workload_bin) {
      // Inside gcc's crtstuff.c functions, which have no line rows: addr2line names the file from
      // the STT_FILE symbol before them ("crtstuff.c:?"), perf prints "crtstuff.c:0". Seen in a
      // SymbolsE2E.SrclineColumnEqualsPerfForTheWorkload run, a sample in __do_global_dtors_aux.
      // (Offsets are addresses here: the file is mapped whole at `base`, and .text's address is
      // its offset, checked below.)
      std::istringstream nm(run_command(fmt::format("nm {} 2>/dev/null", shell_quote(bin))));
      std::string line;
      // And inside _start (crt1.o, no line rows and no STT_FILE before it): addr2line says
      // "??:?", perf prints "??:0" in report's srcline key and nothing in script's field. Seen
      // in a fresh-clone run of SymbolsE2E.SrclinesAndInlineChainsEqualAddr2line, a sample at
      // _start's first instruction.
      size_t crt = 0;
      while (std::getline(nm, line)) {
        for (const char* f : {" t __do_global_dtors_aux", " t frame_dummy", " t register_tm_clones", " T _start"}) {
          if (line.ends_with(f)) offsets.push_back(std::strtoull(line.c_str(), nullptr, 16) + 4), ++crt;
        }
      }
      ASSERT_EQ(crt, 4u) << "set-up failed: crtstuff.c's functions or _start not in " << bin;
      ASSERT_EQ(text_section.addr, text) << "set-up failed: .text's address is not its offset";
    }
    for (uint64_t off : offsets) {
      Sample s;
      s.pid = s.tid = pid;
      s.time = ++now;
      s.period = 100000;
      s.ip = base + off;
      w.write_record(rb.sample(s, kMiscUser));
    }
  }
  w.finish();
  ASSERT_GT(plt_samples, 0u) << "set-up failed: no PLT section found";

  // Report only where perf's symbols are ours: in the PLT of a file with a .symtab perf 6.1
  // finds _init (extended over the PLT) where tperf finds "name@plt", a symbol gap, not a
  // srcline one; bash has no .symtab.
  const bool compare_report = binaries.size() > 1;
  for (auto [perf_args, tperf_args] :
       {std::pair<std::string, std::string>{"script -F ip,dso,srcline", "script -F ip,dso,srcline"},
        {"report --stdio -s srcline -g none --pid 502", "report --stdio --no-unwind-summary -s srcline -g none --pid 502"}}) {
    if (perf_args.starts_with("report") && !compare_report) continue;
    SCOPED_TRACE(perf_args);
    ComparedOutputs c = compare_outputs(
        fmt::format("perf {} -i {} 2>/dev/null | grep -v '^#' | grep -v '^$'", perf_args, shell_quote(path)),
        fmt::format("{} {} -i {} | grep -v '^#' | grep -v '^$'", TPERF_BINARY, tperf_args, shell_quote(path)), path);
    EXPECT_EQ(c.diff, "") << "diff perf tperf";
    EXPECT_GE(c.perf_lines, perf_args.starts_with("report") ? 2u : 8u) << "perf printed too little";
  }
  // _start's sample in report's srcline key: perf's "??:0" (the workload's PLT keeps the rest
  // of its process out of this comparison, see above).
  {
    const std::string args = "-s sym,srcline -g none --pid 501 --symbols _start";
    ComparedOutputs c = compare_outputs(
        fmt::format("perf report --stdio {} -i {} 2>/dev/null | grep -v '^#' | grep -v '^$'", args, shell_quote(path)),
        fmt::format("{} report --stdio --no-unwind-summary {} -i {} | grep -v '^#' | grep -v '^$'", TPERF_BINARY, args,
                    shell_quote(path)),
        path);
    EXPECT_EQ(c.diff, "") << "diff perf tperf";
    CommandResult perf_start =
        run(fmt::format("perf report --stdio {} -i {} 2>/dev/null | grep -v '^#'", args, shell_quote(path)));
    EXPECT_NE(perf_start.out.find("??:0"), std::string::npos) << "perf printed no _start entry:\n" << perf_start.out;
  }
  // The cases are there: a PLT address printed as <dso>[<offset>], crtstuff's file from .symtab.
  CommandResult p = run(fmt::format("perf script -F ip,dso,srcline -i {} 2>/dev/null", shell_quote(path)));
  EXPECT_NE(p.out.find("crtstuff.c:0"), std::string::npos) << p.out;
  CommandResult t = run(fmt::format("{} script -F ip,dso,srcline -i {}", TPERF_BINARY, shell_quote(path)));
  EXPECT_NE(t.out.find(fmt::format("  {}[", std::filesystem::path(workload_bin).filename().string())),
            std::string::npos)
      << t.out;
}

}  // namespace
}  // namespace tperf::test::e2e
