// `tperf script` against `perf script` (perf 6.1, the system perf) on the same files: both outputs
// go to files and `diff` must find nothing. Files: fresh recordings made at test time with the
// system perf (a workload that starts a thread, forks, execs itself and exits; a system-wide
// recording with context switches; a pipe-mode recording) and the shared corpus.
//
// The default output (no -F: sym and symoff included) is compared on the recordings of the dynamic
// workload (user, shared-library and kernel symbols; tests/e2e/symbols_test.cc has more), and
// also where perf has no symbols at all:
//  - recordings of a static, stripped workload (gcc -O1 -static -s, no .symtab, no libc.so, no
//    ld.so) made with cpu-clock:u, so that no sample lands in the kernel (perf would name kernel
//    functions from /proc/kallsyms); the workload makes no vDSO call (perf would name those);
//  - the corpus files in file mode, recorded on machines whose binaries and kernels are not here
//    (perf finds no build-id match). Pipe-mode corpus files are excluded from that comparison:
//    perf takes the running kernel's kallsyms for them and prints (wrong) names.
// Every other comparison uses field lists without sym.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "e2e/recording_util.h"
#include "perfdata/writer.h"
#include "test_util.h"

namespace tperf {
namespace {

namespace fs = std::filesystem;
using test::shell_quote;
using test::e2e::CommandResult;
using test::e2e::Recording;
using test::e2e::run;

// Static so the recordings see no shared library; the busy loops count instead of reading the
// clock so that no sample can land in the vDSO.
constexpr const char* kWorkloadSource = R"(
#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
static volatile unsigned long sink;
__attribute__((noinline)) static void spin(unsigned long n) { for (unsigned long i = 0; i < n; i++) sink += i * 7; }
__attribute__((noinline)) static void* worker(void* a) { spin(30000000UL); return a; }
int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "child") == 0) { spin(20000000UL); return 0; }
  pthread_t t;
  if (pthread_create(&t, 0, worker, 0) != 0) return 1;
  spin(20000000UL);
  pid_t p = fork();
  if (p == 0) { spin(10000000UL); execl("/proc/self/exe", argv[0], "child", (char*)0); _exit(1); }
  waitpid(p, 0, 0);
  pthread_join(t, 0);
  spin(10000000UL);
  return 0;
}
)";

struct Binaries {
  std::string error;
  std::string static_stripped;
  std::string dynamic;
};

const Binaries& binaries() {
  static const Binaries b = [] {
    Binaries r;
    std::string dir = test::e2e::scratch_dir();
    std::string src = dir + "/script_workload.c";
    std::ofstream(src) << kWorkloadSource;
    r.static_stripped = dir + "/script_workload_static";
    r.dynamic = dir + "/script_workload";
    CommandResult c1 = run("gcc -O1 -static -s -pthread -o " + shell_quote(r.static_stripped) + " " + shell_quote(src));
    CommandResult c2 =
        run("gcc -O1 -g -fno-omit-frame-pointer -pthread -o " + shell_quote(r.dynamic) + " " + shell_quote(src));
    if (c1.status != 0) r.error = "cannot build a static workload: " + c1.err;
    if (c2.status != 0) r.error = "cannot build the workload: " + c2.err;
    return r;
  }();
  return b;
}

// Records once per test program; `args` has {out}, {static} and {dynamic}.
const Recording& recording(const std::string& name, const std::string& args) {
  static std::map<std::string, Recording> made;
  if (auto it = made.find(name); it != made.end()) return it->second;
  Recording rec;
  const Binaries& b = binaries();
  if (!b.error.empty()) {
    rec.error = b.error;
  } else {
    std::string path = test::e2e::scratch_dir() + "/script-" + name + ".data";
    rec = test::e2e::record_with_perf(
        "timeout 60 " + fmt::format(fmt::runtime(args), fmt::arg("out", shell_quote(path)),
                                    fmt::arg("static", shell_quote(b.static_stripped)),
                                    fmt::arg("dynamic", shell_quote(b.dynamic))),
        path);
  }
  return made.emplace(name, rec).first->second;
}

#define REQUIRE_RECORDING(var, name, args) TPERF_REQUIRE_RECORDING(var, recording(name, args))

struct Outputs {
  std::string diff;  // empty when the two outputs are the same
  size_t lines = 0;  // lines perf printed
  int perf_status = 0, tperf_status = 0;
  std::string tperf_err;
};

// Runs `perf script ARGS` and `tperf script ARGS` on `input`, diffs their standard outputs.
// `stdin_pipe`: tperf reads the file from a pipe on standard input (no -i), as perf does.
Outputs compare(const std::string& input, const std::string& args, bool stdin_pipe = false) {
  static int n = 0;
  std::string base = fmt::format("{}/cmp{}", test::e2e::scratch_dir(), n++);
  Outputs o;
  CommandResult p = run(fmt::format("perf script -i {} {} > {}.perf", shell_quote(input), args, base));
  std::string tcmd = stdin_pipe
                         ? fmt::format("cat {} | {} script {} > {}.tperf", shell_quote(input), TPERF_BINARY, args, base)
                         : fmt::format("{} script -i {} {} > {}.tperf", TPERF_BINARY, shell_quote(input), args, base);
  CommandResult t = run(tcmd);
  o.perf_status = p.status;
  o.tperf_status = t.status;
  o.tperf_err = t.err;
  o.diff = run(fmt::format("diff {0}.perf {0}.tperf | head -20", base)).out;
  o.lines = static_cast<size_t>(std::stoul("0" + run(fmt::format("wc -l < {}.perf", base)).out));
  // A differing output, or tperf failing where perf printed something, fails the comparison:
  // keep what it looked at and name the place in the message.
  if (!o.diff.empty() || (o.tperf_status != 0 && o.lines > 0)) {
    const std::string where = fmt::format("(recording and both outputs of `script {}`: {})\n", args,
                                          test::e2e::keep_artifacts({input, base + ".perf", base + ".tperf"}));
    if (!o.diff.empty()) o.diff += where;
    if (o.tperf_status != 0) o.tperf_err += where;
  }
  return o;
}

// The same standard output, perf printed something (the comparison is not vacuous) and tperf
// exited 0.
#define EXPECT_SAME_NONEMPTY(input, args)                                                                      \
  do {                                                                                                         \
    Outputs o_ = compare(input, args);                                                                         \
    EXPECT_EQ(o_.diff, "") << "perf script " << (args) << " vs tperf script (first lines of diff perf tperf)"; \
    EXPECT_GT(o_.lines, 0u) << "perf script " << (args) << " printed nothing";                                 \
    EXPECT_EQ(o_.tperf_status, 0) << o_.tperf_err;                                                             \
  } while (0)

const char* const kFieldLists[] = {
    "-F comm,pid,tid,time,event,ip",
    "--show-task-events -F comm,pid,tid,time,event,ip",
    "-F comm,tid,time --ns",
};

// --- fresh recordings --------------------------------------------------------------------------

constexpr const char* kTask = "perf record -q -e cpu-clock -F 1000 -o {out} -- {static}";
constexpr const char* kTaskChain = "perf record -q -e cpu-clock -F 1000 -g -o {out} -- {static}";
constexpr const char* kUser = "perf record -q -e cpu-clock:u -F 1000 -o {out} -- {static}";
constexpr const char* kUserChain = "perf record -q -e cpu-clock:u -F 1000 -g -o {out} -- {static}";
constexpr const char* kDynamicChain = "perf record -q -e cpu-clock -F 1000 -g -o {out} -- {dynamic}";
constexpr const char* kSystemWide = "perf record -q -e cpu-clock -F 1000 -a --switch-events -o {out} -- sleep 0.2";
constexpr const char* kIntrRegs = "perf record -q -e cpu-clock -F 1000 -I -o {out} -- {static}";
constexpr const char* kDwarf = "perf record -q -e cpu-clock:u -F 1000 --call-graph dwarf,4096 -o {out} -- {dynamic}";
constexpr const char* kFaults = "perf record -q -e page-faults -c 1 -d -o {out} -- {dynamic}";
constexpr const char* kPageSizes =
    "perf record -q -e page-faults -c 1 -d --data-page-size --code-page-size -o {out} -- {dynamic}";
constexpr const char* kPipe = "perf record -q -e cpu-clock -F 1000 -o - -- {static} > {out}";

TEST(ScriptE2E, ForkExecExitFieldLists) {
  REQUIRE_RECORDING(rec, "task", kTask);
  for (const char* args : kFieldLists) EXPECT_SAME_NONEMPTY(rec.path, args);
  EXPECT_SAME_NONEMPTY(rec.path, "--show-mmap-events -F comm,pid,tid,time,event,ip,dso");
  EXPECT_SAME_NONEMPTY(rec.path, "--show-task-events -F comm,tid,time,misc --ns");
  // The recording has what the comparisons are about: an exec'd child's COMM, FORK and EXIT lines.
  std::string text = run("perf script -i " + shell_quote(rec.path) + " --show-task-events -F comm,tid").out;
  EXPECT_NE(text.find("PERF_RECORD_COMM exec"), std::string::npos);
  EXPECT_NE(text.find("PERF_RECORD_FORK"), std::string::npos);
  EXPECT_NE(text.find("PERF_RECORD_EXIT"), std::string::npos);
}

TEST(ScriptE2E, ForkExecExitWithCallchains) {
  REQUIRE_RECORDING(rec, "task-g", kTaskChain);
  for (const char* args : kFieldLists) EXPECT_SAME_NONEMPTY(rec.path, args);
  // Frames: user addresses as offsets into the file, kernel ones raw, the DSO of each.
  EXPECT_SAME_NONEMPTY(rec.path, "-F comm,tid,time,event,ip,dso");
  EXPECT_SAME_NONEMPTY(rec.path, "-F ip");
  EXPECT_SAME_NONEMPTY(rec.path, "-G -F comm,tid,time,event,ip,dso");
  // With symbols: kernel frames from kallsyms, the static stripped binary's frames [unknown].
  EXPECT_SAME_NONEMPTY(rec.path, "");
  EXPECT_SAME_NONEMPTY(rec.path, "-F ip,sym,symoff,dso");
}

// The default output, symbols included, where perf has none: the static stripped workload in
// user mode only.
TEST(ScriptE2E, DefaultOutputWithoutSymbols) {
  REQUIRE_RECORDING(rec, "user", kUser);
  EXPECT_SAME_NONEMPTY(rec.path, "");
  EXPECT_SAME_NONEMPTY(rec.path, "--show-task-events --show-mmap-events");
  EXPECT_SAME_NONEMPTY(rec.path, "-F +misc,-period --ns");
  EXPECT_SAME_NONEMPTY(rec.path, "-F ip,sym,symoff,dso");
}

TEST(ScriptE2E, DefaultOutputWithCallchainsWithoutSymbols) {
  REQUIRE_RECORDING(rec, "user-g", kUserChain);
  EXPECT_SAME_NONEMPTY(rec.path, "");
  EXPECT_SAME_NONEMPTY(rec.path, "--show-task-events");
  EXPECT_SAME_NONEMPTY(rec.path, "-G");
  EXPECT_SAME_NONEMPTY(rec.path, "--max-stack 2");
  EXPECT_SAME_NONEMPTY(rec.path, "-F comm,tid,ip,sym");
}

// The attr of the writer-made files below: a user-space event with identifiers, times, periods
// and callchains, and the side-band records perf record asks for.
perfdata::PerfEventAttr user_chain_attr(uint32_t type, uint64_t config) {
  using namespace perfdata;
  PerfEventAttr attr;
  attr.type = type;
  attr.size = kAttrSizeVer7;
  attr.config = config;
  attr.sample_period = 10000;
  attr.sample_type = kSampleIdentifier | kSampleIp | kSampleTid | kSampleTime | kSamplePeriod | kSampleCallchain;
  for (auto bit : {kFlagDisabled, kFlagInherit, kFlagExcludeKernel, kFlagExcludeHv, kFlagSampleIdAll, kFlagMmap,
                   kFlagComm, kFlagTask, kFlagMmap2}) {
    attr.set_flag(bit);
  }
  return attr;
}

// tperf caches the text of callchain frames per address-space version and ip: the same ip must
// print the new file once a later mmap covers it, in the same process and in a forked child that
// copied the parent's maps and then mapped something else there. The file is made with our
// writer; perf reads it as the oracle.
TEST(ScriptE2E, RepeatedFramesFollowMapChanges) {
  using namespace perfdata;
  TPERF_REQUIRE_PROGRAM("perf");
  std::string path = test::e2e::scratch_dir() + "/map-changes.data";
  Writer w;
  w.open(path);
  w.add_attr(user_chain_attr(kTypeSoftware, kSwCpuClock), {7}, "cpu-clock:u");
  w.set_arch("x86_64");
  w.set_nrcpus(1, 1);
  RecordBuilder rb = w.builder(0);
  constexpr int32_t kPid = 4242, kChild = 4243;
  uint64_t t = 1'000'000'000;
  auto sid = [&](int32_t pid) { return SampleId{.pid = static_cast<uint32_t>(pid), .tid = static_cast<uint32_t>(pid), .time = t, .id = 7}; };
  auto mmap = [&](int32_t pid, const char* file, uint64_t pgoff) {
    w.write_record(rb.mmap2({.pid = pid, .tid = pid, .addr = 0x400000,
                             .len = 0x10000, .pgoff = pgoff, .filename = file},
                            sid(pid)));
    t += 1000;
  };
  auto samples = [&](int32_t pid) {
    for (int i = 0; i < 3; ++i) {
      Sample s;
      s.identifier = 7;
      s.ip = 0x401234;
      s.pid = static_cast<uint32_t>(pid);
      s.tid = static_cast<uint32_t>(pid);
      s.time = t;
      s.period = 10000;
      s.callchain = {kContextUser, 0x401234, 0x402000 + 0x10 * static_cast<uint64_t>(i), 0x401234};
      w.write_record(rb.sample(s));
      t += 1000;
    }
  };
  w.write_record(rb.comm({.pid = kPid, .tid = kPid, .comm = "app"}, sid(kPid)));
  mmap(kPid, "/opt/first/app", 0);
  samples(kPid);
  mmap(kPid, "/opt/second/lib.so", 0x3000);  // the same addresses, another file and offset
  samples(kPid);
  w.write_record(rb.fork({.pid = kChild, .ppid = kPid, .tid = kChild, .ptid = kPid, .time = t}, sid(kChild)));
  t += 1000;
  samples(kChild);  // the copied maps
  mmap(kChild, "/opt/third/child.so", 0x1000);
  samples(kChild);
  samples(kPid);  // the parent's maps did not change
  w.finish();

  EXPECT_SAME_NONEMPTY(path, "");
  EXPECT_SAME_NONEMPTY(path, "-F comm,pid,tid,ip,sym,dso");
  // The comparison is about what it means to be: each file shows up in the frames.
  std::string text = run(fmt::format("{} script -i {} -F tid,ip,dso", TPERF_BINARY, shell_quote(path))).out;
  for (const char* file : {"(/opt/first/app)", "(/opt/second/lib.so)", "(/opt/third/child.so)"}) {
    EXPECT_NE(text.find(file), std::string::npos) << file << " in:\n" << text;
  }
}

// Field lists per event type (-F hw:... -F sw:...) print the same frames differently: a line
// cached for one event's fields is not the other's.
TEST(ScriptE2E, FramesOfEventTypesWithTheirOwnFields) {
  using namespace perfdata;
  TPERF_REQUIRE_PROGRAM("perf");
  std::string path = test::e2e::scratch_dir() + "/two-types.data";
  Writer w;
  w.open(path);
  w.add_attr(user_chain_attr(kTypeHardware, 0 /* cycles */), {7}, "cycles:u");
  w.add_attr(user_chain_attr(kTypeSoftware, kSwCpuClock), {8}, "cpu-clock:u");
  w.set_arch("x86_64");
  w.set_nrcpus(1, 1);
  RecordBuilder rb = w.builder(0);
  constexpr int32_t kPid = 4242;
  uint64_t t = 1'000'000'000;
  auto sid = [&] { return SampleId{.pid = kPid, .tid = kPid, .time = t, .id = 7}; };
  w.write_record(rb.comm({.pid = kPid, .tid = kPid, .comm = "app"}, sid()));
  t += 1000;
  w.write_record(rb.mmap2({.pid = kPid, .tid = kPid, .addr = 0x400000, .len = 0x10000, .filename = "/opt/app"}, sid()));
  t += 1000;
  for (int i = 0; i < 6; ++i) {
    Sample s;
    s.identifier = i % 2 ? 8 : 7;  // the events take turns on the same stacks
    s.ip = 0x401234;
    s.pid = kPid;
    s.tid = kPid;
    s.time = t;
    s.period = 10000;
    s.callchain = {kContextUser, 0x401234, 0x402000, 0x403000};
    w.write_record(rb.sample(s));
    t += 1000;
  }
  w.finish();

  EXPECT_SAME_NONEMPTY(path, "-F hw:comm,tid,ip,sym -F sw:comm,tid,ip,dso");
  EXPECT_SAME_NONEMPTY(path, "-F hw:tid,ip,dso -F sw:tid,ip,sym,symoff");
  // What the comparison is about: each event's frames as its own fields show them.
  std::string text =
      run(fmt::format("{} script -i {} -F hw:comm,tid,ip,sym -F sw:comm,tid,ip,dso", TPERF_BINARY, shell_quote(path)))
          .out;
  EXPECT_NE(text.find(" 2000 [unknown]\n"), std::string::npos) << text;  // offsets into the file
  EXPECT_NE(text.find(" 2000 (/opt/app)\n"), std::string::npos) << text;
}

TEST(ScriptE2E, SharedLibraryCallchainDsos) {
  REQUIRE_RECORDING(rec, "dynamic-g", kDynamicChain);
  EXPECT_SAME_NONEMPTY(rec.path, "-F comm,pid,tid,time,event,ip,dso");
  EXPECT_SAME_NONEMPTY(rec.path, "--show-mmap-events -F comm,tid,time,event,ip,dso");
  // Symbols of the workload, libc, ld.so and the kernel.
  EXPECT_SAME_NONEMPTY(rec.path, "");
  EXPECT_SAME_NONEMPTY(rec.path, "-F comm,tid,ip,sym,symoff,dso");
  EXPECT_SAME_NONEMPTY(rec.path, "-G");
}

TEST(ScriptE2E, SystemWideWithSwitchEvents) {
  REQUIRE_RECORDING(rec, "syswide", kSystemWide);
  for (const char* args : kFieldLists) EXPECT_SAME_NONEMPTY(rec.path, args);
  EXPECT_SAME_NONEMPTY(rec.path, "--show-switch-events -F comm,pid,tid,cpu,time,event,misc");
  EXPECT_SAME_NONEMPTY(rec.path, "--show-mmap-events -F comm,pid,tid,cpu,time,event,ip,dso");
  EXPECT_SAME_NONEMPTY(rec.path, "--show-task-events --show-mmap-events --show-switch-events -F comm,tid,cpu,time");
}

TEST(ScriptE2E, Filters) {
  REQUIRE_RECORDING(rec, "syswide", kSystemWide);
  EXPECT_SAME_NONEMPTY(rec.path, "--cpu 0 -F comm,tid,cpu,time,event,ip");
  // Side-band records are filtered by cpu too.
  EXPECT_SAME_NONEMPTY(rec.path,
                       "--cpu 0 --show-task-events --show-mmap-events --show-switch-events -F comm,tid,cpu,time");
  // Filter on a task that has samples: the first one perf prints (whatever ran on this machine).
  // perf prints "%16s %5d " for comm,tid: the tid is the last word, the comm what comes before.
  std::string first = run("perf script -i " + shell_quote(rec.path) + " -F comm,tid 2>/dev/null | head -1").out;
  while (!first.empty() && (first.back() == '\n' || first.back() == ' ')) first.pop_back();
  size_t split = first.rfind(' ');
  ASSERT_NE(split, std::string::npos) << first;
  std::string tid = first.substr(split + 1);
  std::string comm = first.substr(0, split);
  comm.erase(0, comm.find_first_not_of(' '));
  while (!comm.empty() && comm.back() == ' ') comm.pop_back();
  EXPECT_SAME_NONEMPTY(rec.path, "--tid " + tid + " -F comm,pid,tid,cpu,time");
  // perf 6.1 rejects a list that names a tid twice ("problems parsing tid list") and prints nothing.
  std::string others = tid == "0" ? ",1" : (tid == "1" ? ",0" : ",0,1");
  EXPECT_SAME_NONEMPTY(rec.path, "--tid " + tid + others + " -F comm,pid,tid,cpu,time");
  ASSERT_FALSE(comm.empty()) << "no comm in perf's first line: " << first;
  if (comm.find(',') == std::string::npos) {
    std::string list = comm == "swapper" ? comm : comm + ",swapper";
    EXPECT_SAME_NONEMPTY(rec.path, "--comm " + shell_quote(list) + " -F comm,pid,tid,time,ip");
  }
  // A pid list: the process of perf's first sample (whatever ran) and init.
  std::string pid = run("perf script -i " + shell_quote(rec.path) + " -F pid 2>/dev/null | head -1").out;
  pid.erase(0, pid.find_first_not_of(' '));
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  ASSERT_FALSE(pid.empty());
  EXPECT_SAME_NONEMPTY(rec.path, "--pid " + pid + (pid == "1" ? "" : ",1") + " -F comm,tid,cpu,time");
  // A time window in the middle of the recording: from the 10th sample to the 30th.
  std::string times = run("perf script -i " + shell_quote(rec.path) + " -F time --ns 2>/dev/null").out;
  std::vector<std::string> t;
  for (size_t pos = 0; pos < times.size();) {
    size_t nl = times.find('\n', pos);
    std::string l = times.substr(pos, nl - pos);
    l.erase(0, l.find_first_not_of(' '));
    if (!l.empty() && l.back() == ' ') l.pop_back();
    if (!l.empty() && l.back() == ':') l.pop_back();
    t.push_back(l);
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
  ASSERT_GT(t.size(), 30u);
  EXPECT_SAME_NONEMPTY(rec.path, "--time " + t[10] + "," + t[30] + " -F comm,tid,time");
  EXPECT_SAME_NONEMPTY(rec.path, "--time " + t[20] + ", -F comm,tid,time --ns");
  EXPECT_SAME_NONEMPTY(rec.path, "--time 10%/2 -F comm,tid,time --ns");
  EXPECT_SAME_NONEMPTY(rec.path, "--time 0%-10%,30%-40% -F comm,tid,time --ns");
  EXPECT_SAME_NONEMPTY(rec.path, "--time 50% -F comm,tid,time --ns");
}

TEST(ScriptE2E, PipeModeFromFileAndFromStdin) {
  REQUIRE_RECORDING(rec, "pipe", kPipe);
  for (const char* args : kFieldLists) EXPECT_SAME_NONEMPTY(rec.path, args);
  Outputs o = compare(rec.path, "-F comm,pid,tid,time,event,ip", /*stdin_pipe=*/true);
  EXPECT_EQ(o.diff, "");
  EXPECT_GT(o.lines, 0u);
}

// Registers as perf names them for the recording's architecture (HEADER_ARCH).
TEST(ScriptE2E, Registers) {
  REQUIRE_RECORDING(intr, "iregs", kIntrRegs);
  EXPECT_SAME_NONEMPTY(intr.path, "-F comm,tid,time,ip,iregs");
  // DWARF-mode recordings copy every user register. (Their callchains need DWARF unwinding,
  // which tperf does not do yet: ip is left out here.)
  REQUIRE_RECORDING(dwarf, "dwarf", kDwarf);
  EXPECT_SAME_NONEMPTY(dwarf.path, "-F comm,tid,time,uregs");
  EXPECT_SAME_NONEMPTY(dwarf.path, "-G -F comm,tid,time,event,ip,dso,uregs");
}

// Page faults: addr is a data address, resolved to the DSO (or [stack], [heap]) it falls in.
TEST(ScriptE2E, PageFaultAddresses) {
  REQUIRE_RECORDING(rec, "faults", kFaults);
  EXPECT_SAME_NONEMPTY(rec.path, "-F comm,tid,time,event,addr,ip,dso");
  EXPECT_SAME_NONEMPTY(rec.path, "-F comm,pid,tid,time,period,event,addr");
  // Linux 5.11 and later record page sizes (Debian 12 has 6.1).
  REQUIRE_RECORDING(sizes, "pagesizes", kPageSizes);
  EXPECT_SAME_NONEMPTY(sizes.path, "-F comm,tid,time,event,addr,ip,dso,data_page_size,code_page_size");
}

// perf's refusals: a field the events cannot fill is an error, as in perf (both print nothing).
TEST(ScriptE2E, FieldErrors) {
  REQUIRE_RECORDING(rec, "task", kTask);
  for (const char* args : {"-F cpu", "-F +addr", "-F symoff", "-F comm,-tid", "-F bogus"}) {
    Outputs o = compare(rec.path, args);
    EXPECT_EQ(o.diff, "") << args;
    EXPECT_EQ(o.lines, 0u) << args;
    EXPECT_NE(o.tperf_status, 0) << args;
  }
}

// --- the shared corpus -------------------------------------------------------------------------

// The corpus files perf 6.1 reads (tests/e2e/corpus_test.cc), except the Intel PT one: perf
// decodes its AUX trace into synthesized samples, which tperf does not do yet.
std::vector<std::string> corpus_files() {
  std::vector<std::string> files;
  for (const auto& f : test::corpus_files_perf_reads()) {
    if (f.find("intel_pt") == std::string::npos) files.push_back(f);
  }
  return files;
}

bool is_pipe_file(const std::string& rel) { return rel.find("pipe") != std::string::npos; }

class ScriptCorpusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TPERF_REQUIRE_CORPUS();
    TPERF_REQUIRE_PROGRAM("perf");
  }
};

TEST_F(ScriptCorpusTest, FieldListsEqualPerf) {
  for (const auto& rel : corpus_files()) {
    SCOPED_TRACE(rel);
    std::string path = test::corpus_dir() + "/" + rel;
    for (const char* args : kFieldLists) EXPECT_SAME_NONEMPTY(path, args);
    EXPECT_SAME_NONEMPTY(path, "--show-mmap-events --show-switch-events --show-lost-events -F comm,pid,tid,time,event");
  }
}

TEST_F(ScriptCorpusTest, BranchStacks) {
  std::string path = test::corpus_dir() + "/quipper/testdata/perf.data.branch-4.14";
  EXPECT_SAME_NONEMPTY(path, "-F comm,tid,ip,brstack");
  EXPECT_SAME_NONEMPTY(path, "-F comm,tid,ip,brstack,dso");
  EXPECT_SAME_NONEMPTY(path, "-F brstacksym");
  EXPECT_SAME_NONEMPTY(path, "-F brstacksym,dso");
}

TEST_F(ScriptCorpusTest, DefaultOutputEqualsPerfWhereItHasNoSymbols) {
  for (const auto& rel : corpus_files()) {
    if (is_pipe_file(rel)) continue;
    SCOPED_TRACE(rel);
    std::string path = test::corpus_dir() + "/" + rel;
    EXPECT_SAME_NONEMPTY(path, "");
    EXPECT_SAME_NONEMPTY(path, "--show-task-events --show-mmap-events -F +misc");
  }
}

}  // namespace
}  // namespace tperf
