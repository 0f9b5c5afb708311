// `tperf script --show-namespace-events`, `--show-cgroup-events`, `--show-bpf-events` and
// `--show-round-events` against `perf script` (perf 6.1), byte for byte. Two inputs:
// - a file written with our writer: NAMESPACES records with seven namespaces, none and nine
//   (perf wraps every four, names the eighth and ninth "UNKNOWN", leaves the bracket open when
//   there are none), a CGROUP record, KSYMBOL register/unregister and BPF_EVENT load/unload
//   records, kernel samples in the BPF program, and two CPUs' records interleaved so that file
//   order and time order differ inside each round (--show-round-events makes perf read in file
//   order, and so must tperf);
// - a recording perf makes with --namespaces --all-cgroups.
// Each on one thread and on two (-j 2 formats the samples in batches on other threads while the
// side-band lines are printed in between: the order must not change).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "e2e/recording_util.h"
#include "perfdata/record_builder.h"
#include "perfdata/writer.h"
#include "test_util.h"

namespace tperf::perfdata {
namespace {

using test::shell_quote;
using test::e2e::CommandResult;
using test::e2e::run;

constexpr uint64_t kProg = 0xffffffffc0a01000ULL;

void write_file(const std::string& path) {
  Writer w;
  w.open(path);
  PerfEventAttr a =
      test::cpu_clock_attr(kSampleIp | kSampleTid | kSampleTime | kSampleCpu | kSamplePeriod | kSampleIdentifier, 1000);
  for (auto bit : {kFlagKsymbol, kFlagBpfEvent, kFlagNamespaces, kFlagCgroup, kFlagExcludeGuest}) a.set_flag(bit);
  w.add_attr(a, {42}, "cpu-clock");
  RecordBuilder rb = w.builder(0);
  uint64_t t = 1'000'000'000;
  auto sid = [&](uint32_t pid, uint32_t cpu, uint64_t time) {
    return SampleId{.pid = pid, .tid = pid, .time = time, .id = 42, .cpu = cpu};
  };
  auto sample = [&](uint32_t pid, uint64_t ip, uint32_t cpu, uint64_t time, uint16_t mode) {
    Sample s{.identifier = 42, .ip = ip, .pid = pid, .tid = pid, .time = time, .cpu = cpu, .period = 1000};
    w.write_record(rb.sample(s, mode));
  };
  auto namespaces = [](int32_t pid, size_t n) {
    NamespacesEvent e{.pid = pid, .tid = pid, .namespaces = {}};
    for (size_t i = 0; i < n; ++i) e.namespaces.push_back({.dev = i == 2 ? 0u : 4u, .ino = i == 5 ? 0u : 0xeffffff0u + i});
    return e;
  };
  w.write_record(rb.comm({.pid = 7, .tid = 7, .comm = "app", .exec = true}, sid(7, 0, t++)));
  w.write_record(rb.comm({.pid = 8, .tid = 8, .comm = "other", .exec = true}, sid(8, 1, t++)));
  w.write_record(rb.namespaces(namespaces(7, 7), sid(7, 0, t++)));
  w.write_record(rb.cgroup({.id = 1234, .path = "/system.slice/app.service"}, sid(7, 0, t++)));
  w.write_record(rb.finished_round());
  // Round 2: CPU 0's records, then CPU 1's, each in time order; the two interleave in time.
  const uint64_t r2 = t;
  t += 100;
  w.write_record(rb.ksymbol({.addr = kProg, .len = 0x200, .ksym_type = 1, .flags = 0, .name = "bpf_prog_0011223344556677_probe"},
                            sid(7, 0, r2 + 1)));
  BpfEvent load{.type = 1, .flags = 0, .id = 77, .tag = {0, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77}};
  w.write_record(rb.bpf_event(load, sid(7, 0, r2 + 2)));
  sample(7, kProg + 0x10, 0, r2 + 4, kMiscKernel);
  sample(7, 0x401000, 0, r2 + 6, kMiscUser);
  w.write_record(rb.namespaces(namespaces(8, 0), sid(8, 0, r2 + 8)));
  sample(8, 0x402000, 1, r2 + 3, kMiscUser);
  w.write_record(rb.namespaces(namespaces(8, 9), sid(8, 1, r2 + 5)));
  sample(8, kProg + 0x20, 1, r2 + 7, kMiscKernel);
  w.write_record(rb.finished_round());
  // Round 3: the program goes away.
  const uint64_t r3 = t;
  t += 100;
  w.write_record(rb.ksymbol({.addr = kProg, .len = 0x200, .ksym_type = 1, .flags = 1, .name = "bpf_prog_0011223344556677_probe"},
                            sid(7, 1, r3 + 3)));
  BpfEvent unload = load;
  unload.type = 2;
  w.write_record(rb.bpf_event(unload, sid(7, 1, r3 + 4)));
  sample(7, kProg + 0x10, 0, r3 + 2, kMiscKernel);
  sample(7, kProg + 0x10, 0, r3 + 5, kMiscKernel);
  w.write_record(rb.cgroup({.id = 1, .path = "/"}, sid(8, 0, r3 + 6)));
  w.write_record(rb.finished_round());
  w.finish();
}

void expect_same_as_perf(const std::string& input, const std::string& args, size_t min_lines,
                         const std::string& must_hold) {
  for (const char* jobs : {"-j 1", "-j 2"}) {
    test::e2e::ComparedOutputs c = test::e2e::compare_outputs(
        fmt::format("perf script {} -i {} 2>/dev/null", args, shell_quote(input)),
        fmt::format("{} script {} {} -i {}", TPERF_BINARY, jobs, args, shell_quote(input)), input);
    test::e2e::expect_same_outputs(c, fmt::format("perf script {} vs tperf {}", args, jobs), min_lines);
  }
  // Not vacuous: what the option prints is there.
  CommandResult perf = run(fmt::format("perf script {} -i {} 2>/dev/null", args, shell_quote(input)));
  EXPECT_NE(perf.out.find(must_hold), std::string::npos) << args << ": perf printed no " << must_hold;
}

TEST(ScriptSidebandEvents, WriterFileEqualsPerf) {
  TPERF_REQUIRE_PERF();
  test::TempDir dir;
  const std::string path = dir.file("sideband.data");
  write_file(path);
  test::e2e::KeepOnFailure keep({path});
  // The kernel image's symbols stay out: an empty kallsyms on both sides.
  const std::string kallsyms = dir.file("kallsyms");
  run("true > " + shell_quote(kallsyms));
  const std::string ks = " --kallsyms " + shell_quote(kallsyms);
  expect_same_as_perf(path, "--show-namespace-events" + ks, 10, "UNKNOWN");
  expect_same_as_perf(path, "--show-namespace-events" + ks, 10, "nr_namespaces: 0\n\t\t[");
  expect_same_as_perf(path, "--show-cgroup-events" + ks, 8, "PERF_RECORD_CGROUP cgroup: 1234 /system.slice/app.service");
  expect_same_as_perf(path, "--show-bpf-events" + ks, 10, "PERF_RECORD_BPF_EVENT type 2, flags 0, id 77");
  expect_same_as_perf(path, "--show-bpf-events -F comm,tid,time,ip,sym" + ks, 10, "bpf_prog_0011223344556677_probe");
  expect_same_as_perf(path, "--show-round-events" + ks, 9, "PERF_RECORD_FINISHED_ROUND");
  expect_same_as_perf(path, "--ns --show-round-events --show-namespace-events --show-bpf-events --show-cgroup-events" + ks,
                      20, "PERF_RECORD_KSYMBOL");
  expect_same_as_perf(path, "--show-round-events --show-task-events -F comm,tid,time --ns" + ks, 9, "PERF_RECORD_COMM");
  expect_same_as_perf(path, "--show-round-events --deltatime --ns" + ks, 9, "PERF_RECORD_FINISHED_ROUND");

  // File order differs from time order here: with --show-round-events both print the samples in
  // file order (pid 8's first sample, earlier in time, comes after two of pid 7's).
  CommandResult ordered = run(fmt::format("{} script -F tid,time --ns{} -i {}", TPERF_BINARY, ks, shell_quote(path)));
  CommandResult in_file = run(fmt::format("{} script -F tid,time --ns --show-round-events{} -i {}", TPERF_BINARY, ks, shell_quote(path)));
  ASSERT_EQ(ordered.status, 0) << ordered.err;
  ASSERT_EQ(in_file.status, 0) << in_file.err;
  std::string in_file_samples;
  for (size_t at = 0; at < in_file.out.size();) {
    size_t end = in_file.out.find('\n', at);
    std::string line = in_file.out.substr(at, end - at + 1);
    if (line.find("FINISHED_ROUND") == std::string::npos) in_file_samples += line;
    at = end + 1;
  }
  EXPECT_NE(ordered.out, in_file_samples) << "the file's order was meant to differ from time order";
}

TEST(ScriptSidebandEvents, PipeModeEqualsPerf) {
  TPERF_REQUIRE_PERF();
  test::TempDir dir;
  const std::string path = dir.file("sideband.data");
  write_file(path);
  const std::string pipe = dir.file("sideband.pipe.data");
  CommandResult conv = run(fmt::format("{} convert --pipe {} {}", TPERF_BINARY, shell_quote(path), shell_quote(pipe)));
  ASSERT_EQ(conv.status, 0) << conv.err;
  test::e2e::KeepOnFailure keep({path, pipe});
  const std::string kallsyms = dir.file("kallsyms");
  run("true > " + shell_quote(kallsyms));
  const std::string ks = " --kallsyms " + shell_quote(kallsyms);
  expect_same_as_perf(pipe, "--show-round-events --show-namespace-events --show-bpf-events --show-cgroup-events" + ks,
                      20, "PERF_RECORD_NAMESPACES");
  expect_same_as_perf(pipe, "--show-namespace-events --show-cgroup-events" + ks, 10, "PERF_RECORD_CGROUP");
}

const test::e2e::Recording& recording() {
  static const test::e2e::Recording r = [] {
    const std::string path = test::e2e::scratch_dir() + "/script-sideband.data";
    return test::e2e::record_with_perf(
        fmt::format("timeout 60 perf record -q --namespaces --all-cgroups -e cpu-clock -g -o {} -- sh -c "
                    "'ls / >/dev/null; sh -c true; ls /usr >/dev/null'",
                    shell_quote(path)),
        path);
  }();
  return r;
}

TEST(ScriptSidebandEvents, PerfRecordingEqualsPerf) {
  TPERF_REQUIRE_RECORDING(rec, recording());
  expect_same_as_perf(rec.path, "--show-namespace-events", 3, "PERF_RECORD_NAMESPACES");
  expect_same_as_perf(rec.path, "--show-namespace-events --show-task-events --show-cgroup-events", 3, "PERF_RECORD_FORK");
  expect_same_as_perf(rec.path, "--show-round-events --show-namespace-events", 3, "PERF_RECORD_FINISHED_ROUND");
}

}  // namespace
}  // namespace tperf::perfdata
