// Counter values read with samples (PERF_SAMPLE_READ): `perf record -e '{cpu-clock,page-faults}:S'`
// samples on the leader and reads the group with each sample; perf script and report make one
// sample of each value read, for the event its id names, with the growth since that id's previous
// sample as period. Also a plain --group recording and `perf record -s` (inherit_stat: READ
// records with each thread's totals, report -T's table). Each recorded anew, in file and pipe mode, against perf 6.1.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>
#include <string>

#include "e2e/recording_util.h"
#include "perfdata/record_builder.h"
#include "perfdata/writer.h"
#include "test_util.h"

namespace tperf::test::e2e {
namespace {

// Page faults and CPU time in one process, then in a child (inherit).
constexpr const char* kWorkload =
    "bash -c 'for i in $(seq 2000); do echo $i; done > /dev/null; ls -R /usr/share/doc > /dev/null; "
    "(ls -R /usr/lib > /dev/null &); wait'";

TEST(SampleReadE2E, ScriptAndReportAsPerf) {
  TPERF_REQUIRE_PERF();
  TempDir dir;
  struct Recording {
    const char* name;
    const char* args;
  };
  for (const Recording& r : {Recording{"read-group", "-e '{cpu-clock,page-faults}:S'"},
                             Recording{"read-group-tc", "-e '{task-clock,page-faults,minor-faults}:S'"},
                             Recording{"group", "-e '{task-clock,context-switches}' --group"},
                             Recording{"inherit-stat", "-s -e task-clock"}}) {
    for (bool pipe : {false, true}) {
      const std::string path = dir.file(fmt::format("{}{}.data", r.name, pipe ? "-pipe" : ""));
      CommandResult rec = run(fmt::format("timeout 60 perf record -q {} -o {} -- {} {}", r.args,
                                          pipe ? "-" : shell_quote(path), kWorkload,
                                          pipe ? "> " + shell_quote(path) : std::string()));
      ASSERT_EQ(rec.status, 0) << "set-up failed: perf record " << r.args << ": " << rec.err;
      const std::string input = pipe ? fmt::format("- < {}", shell_quote(path)) : shell_quote(path);
      for (std::string cmd : {"script", "script -F +period", "script -F comm,tid,event,period,ip,sym",
                              "report --stdio", "report --stdio -n", "report --stdio --no-group -n",
                              "report --stdio --no-children --sort comm,sym -n", "report --stdio -T",
                              "report --stdio --threads -n --no-group"}) {
        SCOPED_TRACE(fmt::format("{}{}: {}", r.name, pipe ? " (pipe)" : "", cmd));
        const bool report = cmd.starts_with("report");
        const std::string filter = report ? " | grep -v '^# (Tip' | grep -v '^#$' | grep -v '^$'" : "";
        ComparedOutputs c = compare_outputs(
            fmt::format("perf {} -i {} 2>/dev/null{}", cmd, input, filter),
            fmt::format("{} {}{} -i {} 2>/dev/null{}", TPERF_BINARY, cmd, report ? " --no-unwind-summary" : "", input,
                        filter),
            path);
        if (c.perf_lines == 0) {
          // perf 6.1 dies of SIGSEGV in `report --no-group` on some of these recordings (a pipe
          // or file whose group read has a member with no sample of its own, seen in fresh-clone
          // runs; the file is then kept). There is nothing to compare with: tperf must read it
          // cleanly and print every event's section.
          const CommandResult p = run(fmt::format("perf {} -i {} > /dev/null 2>&1", cmd, input));
          if (p.status > 128) {
            const CommandResult t = run(fmt::format("{} {} -i {}", TPERF_BINARY, cmd, input));
            EXPECT_EQ(t.status, 0) << t.err;
            EXPECT_EQ(t.err, "");
            EXPECT_NE(t.out.find("# Samples: "), std::string::npos) << t.out;
            std::printf("note: perf %s crashed (status %d) on %s, kept in %s; tperf checked for a clean read only\n",
                        cmd.c_str(), p.status, input.c_str(), c.kept.c_str());
            continue;
          }
        }
        EXPECT_EQ(c.diff, "") << "diff perf tperf; kept in " << c.kept;
        EXPECT_GE(c.perf_lines, 5u) << "perf printed too little";
      }
      // perf record -s: the threads' totals (READ records) are in the -T table.
      if (std::string(r.name) == "inherit-stat") {
        CommandResult t = run(fmt::format("{} report --stdio -q -T -i {}", TPERF_BINARY, input));
        EXPECT_NE(t.out.find("TID  task-clock\n"), std::string::npos) << t.out;
      }
      // The members are there: each event of the group has samples of its own.
      if (std::string(r.name).starts_with("read-group")) {
        CommandResult t = run(fmt::format("{} script -F event -i {} | sort | uniq -c", TPERF_BINARY, input));
        EXPECT_NE(t.out.find("page-faults:"), std::string::npos) << t.out;
      }
    }
  }
}

// A group read made with our writer, the periods worked out by hand: values (cpu-clock,
// page-faults) of (1000, 5), (3000, 5), (3500, 9) and one of an id no event has give cpu-clock
// 1000, 2000, 500 and page-faults 5, then nothing (it did not grow), then 4.
TEST(SampleReadE2E, GroupValuesBecomeMemberSamples) {
  using namespace tperf::perfdata;
  PerfEventAttr leader = test::cpu_clock_attr(kSampleIp | kSampleTid | kSampleTime | kSampleRead | kSampleId | kSamplePeriod);
  leader.read_format = kReadId | kReadGroup;
  PerfEventAttr member = leader;
  member.config = kSwPageFaults;
  member.sample_period = 0;
  RecordBuilder rb(leader);
  TempDir dir;
  const std::string path = dir.file("read.data");
  Writer w;
  w.open(path);
  w.add_attr(leader, {11}, "cpu-clock");
  w.add_attr(member, {12}, "page-faults");
  CommEvent comm;
  comm.pid = comm.tid = 99;
  comm.comm = "reader";
  SampleId sid;
  sid.pid = sid.tid = 99;
  sid.time = 10;
  sid.id = 11;
  w.write_record(rb.comm(comm, sid));
  uint64_t time = 100;
  for (auto [clock, faults] : {std::pair<uint64_t, uint64_t>{1000, 5}, {3000, 5}, {3500, 9}}) {
    Sample smp;
    smp.pid = smp.tid = 99;
    smp.time = time += 100;
    smp.id = 11;
    smp.period = 777;  // the leader's own period: not what perf shows
    smp.ip = 0xffffffff81000000;
    smp.read.values = {{clock, 11, 0}, {faults, 12, 0}, {42, 13, 0}};
    w.write_record(rb.sample(smp, kMiscKernel));
  }
  w.finish();
  // The period, then the event name padded to the longest one.
  const std::string expected =
      "1000   cpu-clock:\n"
      "5 page-faults:\n"
      "2000   cpu-clock:\n"
      "500   cpu-clock:\n"
      "4 page-faults:\n";
  CommandResult t = run(fmt::format("{} script -F event,period -i {} | sed 's/^ *//'", TPERF_BINARY, shell_quote(path)));
  EXPECT_EQ(t.status, 0) << t.err;
  std::string got;
  std::istringstream in(t.out);
  for (std::string line; std::getline(in, line);) got += line.substr(0, line.find_last_not_of(' ') + 1) + "\n";
  EXPECT_EQ(got, expected) << t.out;
  TPERF_REQUIRE_PROGRAM("perf");
  ComparedOutputs c = compare_outputs(fmt::format("perf script -F event,period -i {} 2>/dev/null", shell_quote(path)),
                                      fmt::format("{} script -F event,period -i {}", TPERF_BINARY, shell_quote(path)), path);
  EXPECT_EQ(c.diff, "") << "diff perf tperf; kept in " << c.kept;
  EXPECT_EQ(c.perf_lines, 5u);
}

}  // namespace
}  // namespace tperf::test::e2e
