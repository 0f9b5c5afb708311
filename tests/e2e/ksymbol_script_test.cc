// BPF programs in kernel samples: files written with our writer hold KSYMBOL records (register
// and unregister) and kernel samples inside, before and after them; `perf script` reads the same
// file, and tperf must name the samples as it does.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "e2e/recording_util.h"
#include "perfdata/record_builder.h"
#include "perfdata/writer.h"
#include "test_util.h"

namespace tperf::perfdata {
namespace {

using test::run_command;
using test::shell_quote;

constexpr uint64_t kProg = 0xffffffffc0a01000ULL;
constexpr uint64_t kTramp = 0xffffffffc0b00000ULL;

// pid 7 "app" samples the kernel: inside a BPF program before it is unloaded and after, inside a
// trampoline, one past the program's end, and in a program loaded later at the same address.
void write_file(const std::string& path) {
  Writer w;
  w.open(path);
  PerfEventAttr a;
  a.type = kTypeSoftware;
  a.size = kAttrSizeVer7;
  a.config = kSwCpuClock;
  a.sample_period = 1000;
  a.sample_type = kSampleIp | kSampleTid | kSampleTime | kSampleCpu | kSamplePeriod | kSampleIdentifier;
  // exclude_guest as `perf record -e cpu-clock` sets it.
  for (auto bit : {kFlagSampleIdAll, kFlagMmap, kFlagComm, kFlagTask, kFlagMmap2, kFlagKsymbol, kFlagBpfEvent,
                   kFlagExcludeGuest}) {
    a.set_flag(bit);
  }
  w.add_attr(a, {42}, "cpu-clock");
  RecordBuilder rb = w.builder(0);
  uint64_t t = 1'000'000'000;
  auto sid = [&](uint32_t pid) { return SampleId{.pid = pid, .tid = pid, .time = t++, .id = 42, .cpu = 0}; };
  auto sample = [&](uint64_t ip) {
    Sample s{.identifier = 42, .ip = ip, .pid = 7, .tid = 7, .time = t++, .cpu = 0, .period = 1000};
    w.write_record(rb.sample(s, kMiscKernel));
  };
  w.write_record(rb.comm({.pid = 7, .tid = 7, .comm = "app", .exec = true}, sid(7)));
  w.write_record(rb.ksymbol({.addr = kProg, .len = 0x200, .ksym_type = 1, .flags = 0,
                             .name = "bpf_prog_6deef7357e7b4530_sys_enter"},
                            sid(0)));
  w.write_record(rb.ksymbol({.addr = kTramp, .len = 0x80, .ksym_type = 1, .flags = 0, .name = "bpf_trampoline_6442"},
                            sid(0)));
  sample(kProg);
  sample(kProg + 0x44);
  sample(kProg + 0x1ff);
  sample(kTramp + 0x10);
  sample(kProg + 0x200);  // one past its end
  w.write_record(rb.ksymbol({.addr = kProg, .len = 0x200, .ksym_type = 1, .flags = 1,
                             .name = "bpf_prog_6deef7357e7b4530_sys_enter"},
                            sid(0)));
  sample(kProg + 0x44);  // the program is gone
  sample(kTramp + 0x20);
  // A new program loaded where the old one was: the samples after it take the new name.
  w.write_record(rb.ksymbol({.addr = kProg, .len = 0x100, .ksym_type = 1, .flags = 0,
                             .name = "bpf_prog_0123456789abcdef_v2"},
                            sid(0)));
  sample(kProg + 0x44);
  w.finish();
}

std::string script(const std::string& tool, const std::string& path, const std::string& args) {
  int status = -1;
  std::string out = run_command(fmt::format("{} script -i {} {} 2>/dev/null", tool, shell_quote(path), args), &status);
  return status == 0 ? out : "exit status " + std::to_string(status) + "\n" + out;
}

TEST(KsymbolScript, BpfSymbolsAsPerfNamesThem) {
  TPERF_REQUIRE_PROGRAM("perf");
  test::TempDir dir;
  std::string path = dir.file("bpf.data");
  write_file(path);
  test::e2e::KeepOnFailure keep({path});
  // No kernel image symbols are wanted here: an empty kallsyms keeps both sides off the host's.
  std::string kallsyms = dir.file("kallsyms");
  run_command("true > " + shell_quote(kallsyms));
  for (const char* fields : {"-F ip,sym,symoff,dso", "-F comm,tid,time,ip,sym,dso", ""}) {
    std::string args = std::string(fields) + " --kallsyms " + shell_quote(kallsyms);
    std::string perf = script("perf", path, args);
    std::string ours = script(TPERF_BINARY, path, args);
    EXPECT_EQ(ours, perf) << args;
    // Not vacuous: perf named the program while it was loaded, and only then.
    EXPECT_NE(perf.find("bpf_prog_6deef7357e7b4530_sys_enter"), std::string::npos) << perf;
  }
  std::string perf = script("perf", path, "-F ip,sym,symoff --kallsyms " + shell_quote(kallsyms));
  EXPECT_NE(perf.find("bpf_prog_6deef7357e7b4530_sys_enter+0x44"), std::string::npos) << perf;
  EXPECT_NE(perf.find("bpf_trampoline_6442+0x10"), std::string::npos) << perf;
  EXPECT_NE(perf.find("bpf_prog_0123456789abcdef_v2+0x44"), std::string::npos) << perf;
}

}  // namespace
}  // namespace tperf::perfdata
