// The pieces of `perf script` text, held against lines perf 6.1 printed. Each expected string was
// captured once from a real recording (the command is given with it) and pasted here; the values
// fed to the formatters are the ones of that line (read off the same output).
#include "output/script_format.h"

#include <gtest/gtest.h>

#include "perfdata/abi.h"

namespace tperf::output {
namespace {

using perfdata::kRecordComm;
using perfdata::kRecordMmap;
using perfdata::kRecordMmap2;
using perfdata::kRecordSample;
using perfdata::kRecordSwitchCpuWide;

std::string start(uint64_t fields, const ScriptLineStart& s, bool nanosecs = false, bool unpadded = false) {
  std::string out;
  ScriptStartStyle style;
  style.nanosecs = nanosecs;
  style.comm_unpadded = unpadded;
  append_line_start(out, fields, s, style);
  return out;
}

ScriptLineStart line(std::string_view comm, int32_t pid, int32_t tid, int32_t cpu, uint64_t time, uint16_t misc = 0,
                     uint32_t type = kRecordSample) {
  ScriptLineStart s;
  s.comm = comm;
  s.pid = pid;
  s.tid = tid;
  s.cpu = cpu;
  s.time = time;
  s.time_shown = time;
  s.misc = misc;
  s.record_type = type;
  return s;
}

// perf record -e cpu-clock -F 1000 -o a.data -- ./wl_static   (gcc -O1 -static -s)
// perf script -i a.data
//   "       wl_static  2690  5387.939348:    1000000 cpu-clock:            401644 [unknown] (/tmp/scr/wl_static)"
TEST(ScriptFormat, DefaultSampleLine) {
  const uint64_t fields = kFieldComm | kFieldTid | kFieldTime | kFieldPeriod | kFieldEvent | kFieldIp | kFieldSym |
                          kFieldSymoff | kFieldDso;
  std::string out = start(fields, line("wl_static", 2690, 2690, -1, 5387939348633ULL));
  append_period(out, 1000000);
  append_event_name(out, "cpu-clock", 9);
  out += ' ';
  static const std::string kDso = "/tmp/scr/wl_static";
  ScriptLocation loc;
  loc.ip = 0x401644;
  loc.has_map = true;
  loc.dso = kDso;
  append_ip(out, loc, {true, true, true, true});
  EXPECT_EQ(out,
            "       wl_static  2690  5387.939348:    1000000 cpu-clock:            401644 [unknown] "
            "(/tmp/scr/wl_static)");
}

// perf script -i a.data -F comm,pid,tid,time,event,ip --show-task-events
//   "       perf-exec     0/0         0.000000: PERF_RECORD_COMM: perf-exec:2690/2690"
//   "       wl_static  2690/2690   5387.939348: cpu-clock:            401644"
TEST(ScriptFormat, PidTidAndTaskEvent) {
  const uint64_t fields = kFieldComm | kFieldPid | kFieldTid | kFieldTime | kFieldEvent | kFieldIp;
  std::string out = start(fields, line("perf-exec", 0, 0, -1, 0));
  perfdata::CommEvent comm;
  comm.pid = 2690;
  comm.tid = 2690;
  comm.comm = "perf-exec";
  append_comm_event(out, comm);
  EXPECT_EQ(out, "       perf-exec     0/0         0.000000: PERF_RECORD_COMM: perf-exec:2690/2690\n");

  out = start(fields, line("wl_static", 2690, 2690, -1, 5387939348633ULL));
  append_event_name(out, "cpu-clock", 9);
  out += ' ';
  ScriptLocation loc;
  loc.ip = 0x401644;
  append_ip(out, loc, {true, false, false, false});
  EXPECT_EQ(out, "       wl_static  2690/2690   5387.939348: cpu-clock:            401644");
}

// perf script -i a.data --show-task-events
//   "       wl_static  2690  5387.938340: PERF_RECORD_COMM exec: wl_static:2690/2690"
//   "       wl_static  2690  5387.989197: PERF_RECORD_FORK(2692:2692):(2690:2690)"
//   "             exe  2692  5388.094820: PERF_RECORD_EXIT(2692:2692):(2690:2690)"
TEST(ScriptFormat, TaskEvents) {
  const uint64_t fields = kFieldComm | kFieldTid | kFieldTime;
  std::string out = start(fields, line("wl_static", 2690, 2690, -1, 5387938340000ULL));
  perfdata::CommEvent comm;
  comm.pid = 2690;
  comm.tid = 2690;
  comm.comm = "wl_static";
  comm.exec = true;
  append_comm_event(out, comm);
  EXPECT_EQ(out, "       wl_static  2690  5387.938340: PERF_RECORD_COMM exec: wl_static:2690/2690\n");

  perfdata::TaskEvent fork;
  fork.pid = 2692;
  fork.tid = 2692;
  fork.ppid = 2690;
  fork.ptid = 2690;
  out = start(fields, line("wl_static", 2690, 2690, -1, 5387989197000ULL));
  append_task_event(out, perfdata::kRecordFork, fork);
  EXPECT_EQ(out, "       wl_static  2690  5387.989197: PERF_RECORD_FORK(2692:2692):(2690:2690)\n");

  out = start(fields, line("exe", 2692, 2692, -1, 5388094820000ULL));
  append_task_event(out, perfdata::kRecordExit, fork);
  EXPECT_EQ(out, "             exe  2692  5388.094820: PERF_RECORD_EXIT(2692:2692):(2690:2690)\n");
}

// perf script -i a.data --show-mmap-events
//   "         swapper     0     0.000000: PERF_RECORD_MMAP -1/0: [0xffffffff81000000(0x1276508) @ 0xffffffff81000000]:
//    x [kernel.kallsyms]_text"
//   "       wl_static  2690  5387.938368: PERF_RECORD_MMAP2 2690/2690: [0x401000(0x79000) @ 0x1000 fe:00 10952795
//    1402063326]: r-xp /tmp/scr/wl_static"
//   "       wl_static  2690  5387.938385: PERF_RECORD_MMAP2 2690/2690: [0x7fa554119000(0x2000) @ 0 00:00 0 0]: r-xp
//   [vdso]"
TEST(ScriptFormat, MmapEvents) {
  std::string out;
  perfdata::MmapEvent m;
  m.misc = perfdata::kMiscKernel;
  m.pid = -1;
  m.tid = 0;
  m.addr = 0xffffffff81000000ULL;
  m.len = 0x1276508;
  m.pgoff = 0xffffffff81000000ULL;
  m.filename = "[kernel.kallsyms]_text";
  append_mmap_event(out, m);
  EXPECT_EQ(out,
            "PERF_RECORD_MMAP -1/0: [0xffffffff81000000(0x1276508) @ 0xffffffff81000000]: x [kernel.kallsyms]_text\n");

  perfdata::Mmap2Event m2;
  m2.pid = 2690;
  m2.tid = 2690;
  m2.addr = 0x401000;
  m2.len = 0x79000;
  m2.pgoff = 0x1000;
  m2.maj = 0xfe;
  m2.min = 0;
  m2.ino = 10952795;
  m2.ino_generation = 1402063326;
  m2.prot = 5;
  m2.flags = 2;
  m2.filename = "/tmp/scr/wl_static";
  out.clear();
  append_mmap2_event(out, m2);
  EXPECT_EQ(out,
            "PERF_RECORD_MMAP2 2690/2690: [0x401000(0x79000) @ 0x1000 fe:00 10952795 1402063326]: r-xp "
            "/tmp/scr/wl_static\n");

  m2.addr = 0x7fa554119000ULL;
  m2.len = 0x2000;
  m2.pgoff = 0;
  m2.maj = m2.min = 0;
  m2.ino = m2.ino_generation = 0;
  m2.filename = "[vdso]";
  out.clear();
  append_mmap2_event(out, m2);
  EXPECT_EQ(out, "PERF_RECORD_MMAP2 2690/2690: [0x7fa554119000(0x2000) @ 0 00:00 0 0]: r-xp [vdso]\n");
}

// perf record --buildid-mmap -e cpu-clock:u -o bid.data -- ./wl
// perf script -i bid.data --show-mmap-events -F comm,pid,tid,time,event,ip,misc
//   "              wl  5053/5053  U      6503.711385: PERF_RECORD_MMAP2 5053/5053: [0x55838ba45000(0x1000) @ 0x1000
//    <a4b6e5babe0139fe05d95adc598f5f0dab490a16>]: r-xp /tmp/scr/wl"
TEST(ScriptFormat, Mmap2WithBuildIdAndMisc) {
  std::string out = start(
      kFieldComm | kFieldPid | kFieldTid | kFieldTime | kFieldMisc,
      line("wl", 5053, 5053, -1, 6503711385000ULL, perfdata::kMiscUser | perfdata::kMiscMmapBuildId, kRecordMmap2));
  perfdata::Mmap2Event m2;
  m2.misc = perfdata::kMiscUser | perfdata::kMiscMmapBuildId;
  m2.pid = m2.tid = 5053;
  m2.addr = 0x55838ba45000ULL;
  m2.len = 0x1000;
  m2.pgoff = 0x1000;
  m2.build_id = {0xa4, 0xb6, 0xe5, 0xba, 0xbe, 0x01, 0x39, 0xfe, 0x05, 0xd9,
                 0x5a, 0xdc, 0x59, 0x8f, 0x5f, 0x0d, 0xab, 0x49, 0x0a, 0x16};
  m2.filename = "/tmp/scr/wl";
  append_mmap2_event(out, m2);
  EXPECT_EQ(out,
            "              wl  5053/5053  U      6503.711385: PERF_RECORD_MMAP2 5053/5053: [0x55838ba45000(0x1000) @ "
            "0x1000 <a4b6e5babe0139fe05d95adc598f5f0dab490a16>]: r-xp /tmp/scr/wl\n");
}

// perf record -e cpu-clock -F 1000 -a --switch-events -o sw.data -- sleep 0.2
// perf script -i sw.data -F comm,tid,cpu,time,misc --show-switch-events
//   "            perf  3114 [001] Sp     5468.184338: PERF_RECORD_SWITCH_CPU_WIDE OUT preempt  next pid/tid:  2186/2186
//   " "         cc1plus  2186 [001]        5468.184340: PERF_RECORD_SWITCH_CPU_WIDE IN           prev pid/tid:
//   3114/3114 "
// perf script -i sw.data -F comm,tid,time,misc --show-mmap-events
//   "         swapper     0 K         0.000000: PERF_RECORD_MMAP -1/0: ..."
TEST(ScriptFormat, SwitchEventsCpuAndMisc) {
  const uint64_t fields = kFieldComm | kFieldTid | kFieldCpu | kFieldTime | kFieldMisc;
  const uint16_t out_preempt = perfdata::kMiscSwitchOut | perfdata::kMiscSwitchOutPreempt;
  std::string out = start(fields, line("perf", 3114, 3114, 1, 5468184338000ULL, out_preempt, kRecordSwitchCpuWide));
  perfdata::SwitchCpuWideEvent sw;
  sw.out = true;
  sw.preempt = true;
  sw.next_prev_pid = 2186;
  sw.next_prev_tid = 2186;
  append_switch_event(out, kRecordSwitchCpuWide, out_preempt, sw);
  EXPECT_EQ(out,
            "            perf  3114 [001] Sp     5468.184338: PERF_RECORD_SWITCH_CPU_WIDE OUT preempt  next pid/tid:  "
            "2186/2186 \n");

  out = start(fields, line("cc1plus", 2186, 2186, 1, 5468184340000ULL, 0, kRecordSwitchCpuWide));
  sw.out = false;
  sw.preempt = false;
  sw.next_prev_pid = 3114;
  sw.next_prev_tid = 3114;
  append_switch_event(out, kRecordSwitchCpuWide, 0, sw);
  EXPECT_EQ(out,
            "         cc1plus  2186 [001]        5468.184340: PERF_RECORD_SWITCH_CPU_WIDE IN           prev pid/tid:  "
            "3114/3114 \n");

  out = start(kFieldComm | kFieldTid | kFieldTime | kFieldMisc,
              line("swapper", 0, 0, 0, 0, perfdata::kMiscKernel, kRecordMmap));
  EXPECT_EQ(out, "         swapper     0 K         0.000000: ");
}

// A LOST record (id, lost 1234, the sample_id of the first sample) spliced into a pipe recording
// (perf record -e cpu-clock -F 1000 -o - -- ./wl_static) right after its first sample;
// perf script --show-lost-events -F comm,pid,tid,time,event then printed
//   "       wl_static 31389/31389  6401.276922: PERF_RECORD_LOST lost 1234"
TEST(ScriptFormat, LostEvent) {
  std::string out = start(kFieldComm | kFieldPid | kFieldTid | kFieldTime | kFieldEvent,
                          line("wl_static", 31389, 31389, -1, 6401276922645ULL));
  perfdata::LostEvent lost;
  lost.lost = 1234;
  append_lost_event(out, lost);
  EXPECT_EQ(out, "       wl_static 31389/31389  6401.276922: PERF_RECORD_LOST lost 1234\n");
}

// perf script -i a.data -F comm,tid,time --ns
//   "       wl_static  2690  5387.939348633: "
// perf script -i sw.data (default fields, cpu-wide)
//   "         cc1plus  3056 [000]  5468.309836:    1000000 cpu-clock: "
TEST(ScriptFormat, TimeAndCpu) {
  EXPECT_EQ(start(kFieldComm | kFieldTid | kFieldTime, line("wl_static", 2690, 2690, -1, 5387939348633ULL), true),
            "       wl_static  2690  5387.939348633: ");
  std::string out =
      start(kFieldComm | kFieldTid | kFieldCpu | kFieldTime, line("cc1plus", 3056, 3056, 0, 5468309836000ULL));
  append_period(out, 1000000);
  append_event_name(out, "cpu-clock", 9);
  EXPECT_EQ(out, "         cc1plus  3056 [000]  5468.309836:    1000000 cpu-clock: ");
  // The microseconds are cut, not rounded (5387.939348633 above prints .939348).
  std::string t;
  append_time(t, 999999999ULL, false);
  EXPECT_EQ(t, "    0.999999: ");
}

// perf record -e cpu-clock -F 1000 -g -o g.data -- ./wl_static
// perf script -i g.data
//   "wl_static  2711  5389.156170:    1000000 cpu-clock: "
//   "\t            163a [unknown] (/tmp/scr/wl_static)"
//   "\tbe552274c0854800 [unknown] ([unknown])"
// perf script -i g.data -F comm,ip,dso
//   "wl_static "
//   "\t            163a (/tmp/scr/wl_static)"
TEST(ScriptFormat, CallchainFrames) {
  std::string out =
      start(kFieldComm | kFieldTid | kFieldTime, line("wl_static", 2711, 2711, -1, 5389156170000ULL), false, true);
  append_period(out, 1000000);
  append_event_name(out, "cpu-clock", 9);
  EXPECT_EQ(out, "wl_static  2711  5389.156170:    1000000 cpu-clock: ");

  static const std::string kDso = "/tmp/scr/wl_static";
  ScriptLocation mapped;
  mapped.ip = 0x163a;  // perf 6.1 prints user frames as offsets into the file
  mapped.has_map = true;
  mapped.dso = kDso;
  ScriptLocation unmapped;
  unmapped.ip = 0xbe552274c0854800ULL;
  out.clear();
  append_frame(out, mapped, {true, true, true, true});
  append_frame(out, unmapped, {true, true, true, true});
  EXPECT_EQ(out, "\t            163a [unknown] (/tmp/scr/wl_static)\n\tbe552274c0854800 [unknown] ([unknown])\n");
  out.clear();
  append_frame(out, mapped, {true, false, false, true});
  EXPECT_EQ(out, "\t            163a (/tmp/scr/wl_static)\n");
}

// perf record -e page-faults -c 1 -d -o pf.data -- ./wl ; perf script -i pf.data -F comm,tid,time,event,addr,dso
//   "              wl 31404  6402.611002: page-faults:     7ffc440a03f9 ([stack])"  (addr column shown alone)
TEST(ScriptFormat, AddrWithDso) {
  static const std::string kStack = "[stack]";
  ScriptLocation loc;
  loc.has_map = true;
  loc.dso = kStack;
  std::string out;
  append_addr(out, 0x7ffc440a03f9ULL, &loc, {false, false, false, true});
  EXPECT_EQ(out, "    7ffc440a03f9 ([stack])");
}

// perf record -e cpu-clock:u --user-regs=AX,BX,IP,SP,R15 -o ur.data -- ./wl_static
// perf script -i ur.data -F comm,tid,ip,uregs
//   "       wl_static  7768            4021b8 ABI:2    AX:0x4000122    BX:0x1c0003f    SP:0x7ffcf9d3d560    IP:0x4021b8
//    R15:0xbf "
TEST(ScriptFormat, UserRegisters) {
  perfdata::RegsDump regs;
  regs.abi = 2;
  regs.mask = (1ULL << 0) | (1ULL << 1) | (1ULL << 7) | (1ULL << 8) | (1ULL << 23);
  regs.regs = {0x4000122, 0x1c0003f, 0x7ffcf9d3d560ULL, 0x4021b8, 0xbf};
  std::string out;
  append_regs(out, regs, regs.mask, script_arch("x86_64"));
  EXPECT_EQ(out, " ABI:2    AX:0x4000122    BX:0x1c0003f    SP:0x7ffcf9d3d560    IP:0x4021b8   R15:0xbf ");
  perfdata::RegsDump none;  // ABI NONE: nothing copied, nothing printed
  out.clear();
  append_regs(out, none, regs.mask, "x86");
  EXPECT_EQ(out, "");
  EXPECT_STREQ(script_register_name("arm64", 30), "lr");
  EXPECT_STREQ(script_register_name("x86", 33), "unknown");
}

// perf script -i quipper/testdata/perf.data.branch-4.14 -F comm,tid,ip,brstack
//   "... 0xffffffffb4208e16/0xffffffffb42071e3/P/-/-/4/  ..." and ".../M/-/-/27/  ..."
TEST(ScriptFormat, BranchFlags) {
  std::string out;
  append_branch_flags(out, 2 | (4 << 4));   // predicted, 4 cycles
  append_branch_flags(out, 1 | (27 << 4));  // mispredicted, 27 cycles
  EXPECT_EQ(out, "/P/-/-/4/ /M/-/-/27/ ");
}

// perf record -e page-faults -c 1 -d --data-page-size --code-page-size -o ps.data -- ./wl
// perf script -i ps.data -F comm,tid,addr,data_page_size,code_page_size: "... 4K 4K", "... N/A 2M"
TEST(ScriptFormat, PageSizeNames) {
  std::string out;
  append_page_size(out, 4096);
  append_page_size(out, 4096);
  append_page_size(out, 0);
  append_page_size(out, 2 << 20);
  EXPECT_EQ(out, " 4K 4K N/A 2M");
}

// Messages perf 6.1 printed for these -F arguments (perf script -i a.data -F ...).
TEST(ScriptFields, ParseErrorsAreThoseOfPerf) {
  ScriptFields f;
  EXPECT_EQ(f.parse("comm,-tid", nullptr), "Cannot mix +-field with overridden fields");
  ScriptFields g;
  EXPECT_EQ(g.parse("bogus", nullptr), "Invalid field requested.");
  ScriptFields h;
  EXPECT_EQ(h.parse("", nullptr), "Cannot set fields to 'none' for all event types.");
  ScriptFields i;
  EXPECT_EQ(i.parse("tid,+comm", nullptr), "Cannot mix +-field with overridden fields");
  ScriptFields j;
  EXPECT_EQ(j.parse("foo:comm", nullptr), "Invalid event type in field string.");
}

TEST(ScriptFields, SetsAddsAndRemoves) {
  ScriptFields f;
  ASSERT_EQ(f.parse("comm,tid", nullptr), "");
  EXPECT_EQ(f.sets[kOutSoftware].fields, kFieldComm | kFieldTid);
  ASSERT_EQ(f.parse("+time", nullptr), "");
  EXPECT_EQ(f.sets[kOutSoftware].fields, kFieldComm | kFieldTid | kFieldTime);
  ASSERT_EQ(f.parse("sw:-tid", nullptr), "");
  EXPECT_EQ(f.sets[kOutSoftware].fields, kFieldComm | kFieldTime);
  EXPECT_EQ(f.sets[kOutHardware].fields, kFieldComm | kFieldTid | kFieldTime);
  // "trace" is only valid for tracepoints: perf warns for the other types and goes on.
  ScriptFields t;
  std::vector<std::string> warnings;
  ASSERT_EQ(t.parse("trace", &warnings), "");
  EXPECT_FALSE(warnings.empty());
  EXPECT_EQ(t.sets[kOutTracepoint].fields, kFieldTrace);
  EXPECT_EQ(t.sets[kOutSoftware].fields, 0u);
}

perfdata::EventAttr cpu_clock(uint64_t sample_type) {
  perfdata::EventAttr ea;
  ea.attr.type = perfdata::kTypeSoftware;
  ea.attr.config = perfdata::kSwCpuClock;
  ea.attr.sample_type = sample_type;
  ea.name = "cpu-clock";
  ea.named = true;  // by the file's EVENT_DESC, as perf record writes it
  return ea;
}

// perf record -e cpu-clock (per-thread: IP|TID|TIME|PERIOD, no CPU), then perf script -i a.data -F ...:
//   -F cpu     -> "Samples for 'cpu-clock' event do not have CPU attribute set. Cannot print 'cpu' field."
//   -F symoff  -> "Display of offsets requested but symbol is notselected."
//   (defaults) -> no cpu column, no error
TEST(ScriptFields, CheckedAgainstTheEvents) {
  using namespace perfdata;
  std::vector<EventAttr> attrs = {cpu_clock(kSampleIp | kSampleTid | kSampleTime | kSamplePeriod)};
  ScriptCheckContext ctx;
  ScriptFields defaults;
  bool callchain = true;
  EXPECT_EQ(check_script_fields(defaults, attrs, ctx, &callchain), "");
  EXPECT_FALSE(defaults.sets[kOutSoftware].fields & kFieldCpu);
  EXPECT_TRUE(defaults.sets[kOutSoftware].fields & kFieldTime);
  EXPECT_FALSE(callchain);

  ScriptFields cpu;
  ASSERT_EQ(cpu.parse("cpu", nullptr), "");
  EXPECT_EQ(check_script_fields(cpu, attrs, ctx, nullptr),
            "Samples for 'cpu-clock' event do not have CPU attribute set. Cannot print 'cpu' field.");
  ScriptFields plus_cpu;
  ASSERT_EQ(plus_cpu.parse("+cpu", nullptr), "");
  EXPECT_EQ(check_script_fields(plus_cpu, attrs, ctx, nullptr),
            "Samples for 'cpu-clock' event do not have CPU attribute set. Cannot print 'cpu' field.");
  ScriptFields symoff;
  ASSERT_EQ(symoff.parse("symoff", nullptr), "");
  EXPECT_EQ(check_script_fields(symoff, attrs, ctx, nullptr),
            "Display of offsets requested but symbol is notselected.");

  std::vector<EventAttr> with_chain = {
      cpu_clock(kSampleIp | kSampleTid | kSampleTime | kSamplePeriod | kSampleCallchain)};
  ScriptFields g;
  EXPECT_EQ(check_script_fields(g, with_chain, ctx, &callchain), "");
  EXPECT_TRUE(callchain);
  ctx.hide_callchain = true;
  EXPECT_EQ(check_script_fields(g, with_chain, ctx, &callchain), "");
  EXPECT_FALSE(callchain);
}

TEST(ScriptFilters, CpuList) {
  std::vector<bool> cpus;
  ASSERT_EQ(parse_cpu_list("1,3-4", &cpus), "");
  EXPECT_EQ(cpus, std::vector<bool>({false, true, false, true, true}));
  EXPECT_NE(parse_cpu_list("4-3", &cpus), "");
  EXPECT_NE(parse_cpu_list("a", &cpus), "");
}

// Names perf gives events when the file stores none. Captured with pipe recordings whose
// EVENT_UPDATE records and EVENT_DESC feature record were cut out, so perf 6.1 had to make the
// name up from the attr (perf record -e EV -o - -- ./wl_static | strip | perf script -F event):
//   cpu-clock:u  (exclude_kernel, exclude_hv, exclude_guest) -> "cpu-clock:uH"
//   cpu-clock:uk (exclude_hv, exclude_guest)                 -> "cpu-clock:kuH"
//   cpu-clock:k  (exclude_user, exclude_hv)                  -> "cpu-clock:k"
//   cpu-clock    (exclude_guest)                             -> "cpu-clock"
//   cpu-clock:HG (no exclude bit)                            -> "cpu-clock:HG"
//   cpu-clock:G  (exclude_host)                              -> "cpu-clock:G"
//   cpu-clock:up (exclude_kernel, exclude_hv, exclude_guest, precise_ip 1) -> "cpu-clock:upH"
TEST(ScriptEventName, ModifiersFromExcludeBits) {
  using perfdata::kFlagExcludeGuest;
  using perfdata::kFlagExcludeHv;
  using perfdata::kFlagExcludeKernel;
  using perfdata::kFlagExcludeUser;
  auto name = [](std::initializer_list<perfdata::AttrFlagBit> bits, unsigned precise = 0) {
    perfdata::EventAttr ea;
    ea.attr.type = perfdata::kTypeSoftware;
    ea.attr.config = perfdata::kSwCpuClock;
    for (auto b : bits) ea.attr.set_flag(b);
    ea.attr.flags |= static_cast<uint64_t>(precise) << perfdata::kFlagPreciseIp0;
    ea.name = perfdata::default_event_name(ea.attr);
    return script_event_name(ea);
  };
  EXPECT_EQ(name({kFlagExcludeKernel, kFlagExcludeHv, kFlagExcludeGuest}), "cpu-clock:uH");
  EXPECT_EQ(name({kFlagExcludeHv, kFlagExcludeGuest}), "cpu-clock:kuH");
  EXPECT_EQ(name({kFlagExcludeUser, kFlagExcludeHv}), "cpu-clock:k");
  EXPECT_EQ(name({kFlagExcludeGuest}), "cpu-clock");
  EXPECT_EQ(name({}), "cpu-clock:HG");
  EXPECT_EQ(name({perfdata::kFlagExcludeHost}), "cpu-clock:G");
  EXPECT_EQ(name({kFlagExcludeKernel, kFlagExcludeHv, kFlagExcludeGuest}, 1), "cpu-clock:upH");
  perfdata::EventAttr stored;
  stored.attr.type = perfdata::kTypeSoftware;
  stored.attr.set_flag(kFlagExcludeKernel);
  stored.name = "cpu-clock:u";  // a name the file stores is printed as it is
  stored.named = true;
  EXPECT_EQ(script_event_name(stored), "cpu-clock:u");
  // ... also when it is the default name of an attr without exclude bits (perf takes the
  // EVENT_DESC name as the evsel's name and adds nothing to it).
  perfdata::EventAttr plain;
  plain.attr.type = perfdata::kTypeSoftware;
  plain.attr.config = perfdata::kSwCpuClock;
  plain.name = perfdata::default_event_name(plain.attr);
  plain.named = true;
  EXPECT_EQ(script_event_name(plain), "cpu-clock");
}


// A pipe's events as their ATTR records arrive (no EVENT_DESC yet), as perf record -e
// '{cycles:u,instructions:u}' -o - writes them (IP|TID|TIME|ID|PERIOD, exclude_kernel,
// exclude_hv, exclude_guest). perf 6.1's `script --header` on the corpus file
// perf.data.piped.header_feautres_group_desc-6.8 prints "# group: {cycles:uH,instructions:u}": the
// leader named from its attr when the check dropped the default cpu field, the member (same
// type, not checked) from the EVENT_DESC feature.
TEST(ScriptFields, PipeEventsNamedOnArrivalAsPerf) {
  using namespace perfdata;
  auto event = [](uint64_t config) {
    EventAttr ea;
    ea.attr.type = kTypeHardware;
    ea.attr.config = config;
    ea.attr.sample_type = kSampleIp | kSampleTid | kSampleTime | kSampleId | kSamplePeriod;
    ea.attr.set_flag(kFlagExcludeKernel);
    ea.attr.set_flag(kFlagExcludeHv);
    ea.attr.set_flag(kFlagExcludeGuest);
    ea.name = default_event_name(ea.attr);
    return ea;
  };
  const std::vector<EventAttr> attrs = {event(0), event(1)};
  ArrivedEventNames defaults = script_names_on_arrival(ScriptFields(), attrs);
  EXPECT_EQ(defaults.error, "");
  EXPECT_EQ(defaults.names, (std::vector<std::string>{"cycles:uH", ""}));
  // -F comm,ip drops no default: no event is named early (perf prints the EVENT_DESC names).
  ScriptFields few;
  ASSERT_EQ(few.parse("comm,ip", nullptr), "");
  ArrivedEventNames none = script_names_on_arrival(few, attrs);
  EXPECT_EQ(none.error, "");
  EXPECT_EQ(none.names, (std::vector<std::string>{"", ""}));
  // -F +cpu: the check fails on the leader, with perf's message and the name it made.
  ScriptFields cpu;
  ASSERT_EQ(cpu.parse("+cpu", nullptr), "");
  ArrivedEventNames failed = script_names_on_arrival(cpu, attrs);
  EXPECT_EQ(failed.error, "Samples for 'cycles:uH' event do not have CPU attribute set. Cannot print 'cpu' field.");
}

}  // namespace
}  // namespace tperf::output
