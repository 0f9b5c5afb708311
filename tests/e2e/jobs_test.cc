// -j: report and script read a file on one thread (-j 1) or read, unpack and order its records on
// a thread of their own (-j 2, the default on a machine with two cores or more); script formats
// its samples in batches on -j threads. The output must be the same whatever the count: these
// tests run -j 1, 2 and 3 (more formatting threads than this machine has cores) on the corpus, on
// fresh recordings (frame pointers, zstd-compressed, DWARF stacks, short-lived processes whose
// threads are released while samples wait to be formatted), on a pipe-mode file (read on one
// thread whatever -j says) and on a writer-made file whose data renames its event half-way (an
// EVENT_UPDATE the reading thread may apply only once every record before it was applied), the
// last one also against perf 6.1.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <initializer_list>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "analysis/sample_path.h"
#include "e2e/recording_util.h"
#include "e2e/unwound_sample.h"
#include "perfdata/reader.h"
#include "perfdata/record_builder.h"
#include "perfdata/writer.h"
#include "session/machine.h"
#include "symbols/dwarf_unwind.h"
#include "symbols/symbolizer.h"
#include "test_util.h"

namespace tperf::test::e2e {
namespace {

using namespace tperf::perfdata;

// The commands whose output is compared between -j 1 and -j 2.
const std::vector<std::string>& commands() {
  static const std::vector<std::string> c = {
      "report --stdio",
      "report --stdio --no-children",
      "report --stdio --no-children -g none -s comm,dso,sym",
      "script",
      "script -F comm,tid,time,event,ip,sym,dso",
      "script -F comm,pid,tid,time,event,ip",  // no symbols: held samples stay over user maps
      "script -F comm,pid,tid,cpu,time,period,event,ip,sym,symoff,dso,srcline",
      "script --inline-callchains -F comm,tid,ip,sym,dso",
      "script --show-task-events --show-mmap-events",
  };
  return c;
}

// Under AddressSanitizer (gcc defines __SANITIZE_ADDRESS__) only -j 1 and -j 3 are compared: -j 2
// takes the same two-stage path as -j 3 with fewer formatting threads, and the sanitized build is
// there for memory errors, which -j 3 meets too. The sanitized tperf takes 0.17 s a start, and
// the corpus test alone starts it about 480 times with all three.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

// Runs every command with -j 1, 2 and 3 on `path` (1 and 3 when sanitized); all must end alike and
// print the same. Returns how many lines the -j 1 runs printed (so that a comparison of nothing is
// seen).
size_t expect_same_for_every_j(const std::string& path) {
  const std::vector<int> others = kSanitized ? std::vector<int>{3} : std::vector<int>{2, 3};
  size_t lines = 0;
  for (const std::string& cmd : commands()) {
    SCOPED_TRACE(cmd);
    const CommandResult one = run(fmt::format("{} {} -j 1 -i {}", TPERF_BINARY, cmd, shell_quote(path)));
    EXPECT_TRUE(one.status == 0 || one.status == 2) << one.err;
    for (int j : others) {
      const CommandResult other = run(fmt::format("{} {} -j {} -i {}", TPERF_BINARY, cmd, j, shell_quote(path)));
      EXPECT_EQ(one.status, other.status) << "-j " << j << ": " << one.err << "\n---\n" << other.err;
      if (one.out != other.out) {
        ADD_FAILURE() << "-j 1 and -j " << j << " differ on " << path << "; kept in " << keep_artifacts({path});
      }
      EXPECT_EQ(one.err, other.err) << "-j " << j;
    }
    lines += static_cast<size_t>(std::count(one.out.begin(), one.out.end(), '\n'));
  }
  return lines;
}

TEST(JobsE2E, CorpusFilesPrintTheSameForEveryJobCount) {
  TPERF_REQUIRE_CORPUS();
  size_t files = 0;
  for (const auto& list : {corpus_files_perf_reads(), corpus_files_perf_refuses()}) {
    for (const std::string& rel : list) {
      const std::string path = corpus_dir() + "/" + rel;
      SCOPED_TRACE(path);
      EXPECT_GT(expect_same_for_every_j(path), 0u);
      ++files;
    }
  }
  EXPECT_GE(files, 10u) << "the corpus lists fewer files than expected";
}

// `run`: how the workload runs, {} standing for the spin program ("{} 0.4" by default).
const Recording& recording(const std::string& name, const std::string& options, const std::string& how = "{} 0.4") {
  static std::map<std::string, Recording> made;
  auto it = made.find(name);
  if (it != made.end()) return it->second;
  std::string error;
  const std::string bin = workload("spin", &error);
  if (bin.empty()) {
    Recording r;
    r.error = "cannot build the workload: " + error;
    return made.emplace(name, r).first->second;
  }
  const std::string path = scratch_dir() + "/jobs-" + name + ".data";
  return made
      .emplace(name, record_with_perf(fmt::format("perf record -q -e cpu-clock -c 50000 {} -o {} -- {}", options,
                                                  shell_quote(path), fmt::format(fmt::runtime(how), shell_quote(bin))),
                                      path))
      .first->second;
}

TEST(JobsE2E, FramePointerRecordingPrintsTheSameForEveryJobCount) {
  TPERF_REQUIRE_RECORDING(rec, recording("fp", "-g"));
  EXPECT_GT(expect_same_for_every_j(rec.path), 100u);
}

TEST(JobsE2E, CompressedRecordingPrintsTheSameForEveryJobCount) {
  TPERF_REQUIRE_RECORDING(rec, recording("zstd", "-g -z"));
  EXPECT_GT(expect_same_for_every_j(rec.path), 100u);
}

// Thirty processes one after the other, 60 ms each, as a real recording has them: threads exit
// and are released a second after their EXIT while later samples wait to be formatted, and every
// new process's records come while batches hold samples (of its parent, of the process before).
// (SamplesAfterTheirThreadsExit below makes a thread released while its own samples wait.)
TEST(JobsE2E, ShortLivedProcessesPrintTheSameForEveryJobCount) {
  TPERF_REQUIRE_RECORDING(rec, recording("short", "-g", "sh -c \"for i in \\$(seq 30); do {} 0.06; done\""));
  EXPECT_GT(expect_same_for_every_j(rec.path), 100u);
  const CommandResult tasks = run(fmt::format("{} script --show-task-events -F comm,pid,tid -i {} | grep -c EXIT",
                                              TPERF_BINARY, shell_quote(rec.path)));
  EXPECT_GE(std::atoi(tasks.out.c_str()), 30) << "the recording holds fewer exits than the test needs";
}

TEST(JobsE2E, DwarfRecordingPrintsTheSameForEveryJobCount) {
  TPERF_REQUIRE_RECORDING(rec, recording("dwarf", "--call-graph dwarf,8192"));
  EXPECT_GT(expect_same_for_every_j(rec.path), 100u);
}

// Unwinding ahead: on two threads the reading thread unwinds the stack copies over a replica of
// the machine, and the handlers' unwinder hands those frames out. They must be the frames the
// applying thread unwinds itself (on one thread), sample by sample, maps included, for a limit
// below the walk's too; with kAlways every unwound sample is served from ahead.
TEST(JobsE2E, FramesUnwoundAheadAreTheFramesUnwoundInPlace) {
  TPERF_REQUIRE_RECORDING(rec, recording("dwarf", "--call-graph dwarf,8192"));
  using Ahead = analysis::ReplayHandlers::UnwindAhead;
  struct Run {
    std::vector<std::string> samples;  // per sample: its offset and frames (address@dso)
    size_t real = 0;                   // samples delivered
    size_t deep = 0;                   // of these, with 3 frames or more
    size_t previous = 0;               // unwinding of the sample before, during a delivery
    symbols::DwarfUnwinder::Stats stats;
  };
  auto replay_with = [&](unsigned jobs, Ahead policy) {
    Run out;
    auto reader = perfdata::Reader::open(rec.path);
    std::unique_ptr<session::Machine> machine = analysis::make_report_machine(*reader);
    symbols::Symbolizer symbolizer(*machine, {});
    symbols::DwarfUnwinder unwinder(*machine);
    perfdata::Sample s, previous;
    std::vector<uint8_t> previous_stack;
    std::vector<session::CallchainFrame> frames;
    analysis::ReplayHandlers h;
    h.jobs = jobs;
    h.unwinder = &unwinder;
    h.replica = [&] { return analysis::make_report_machine(*reader); };
    h.unwind_ahead = policy;
    h.on_sample = [&](const perfdata::Record& r, uint64_t) {
      const perfdata::EventAttr* ea = reader->attr_of(r);
      ASSERT_NE(ea, nullptr);
      const std::string line =
          unwound_sample_line(*reader, *machine, unwinder, r, out.samples.size() % 2 ? 5 : 127, s, frames);
      out.samples.push_back(line);
      ++out.real;
      if (frames.size() >= 3) ++out.deep;
      // Another sample unwound while this one is delivered (as an off-CPU analysis unwinds the
      // stack kept from an earlier sample) must get its own frames, not this one's.
      if (!previous_stack.empty()) {
        frames.clear();
        session::Thread& pt =
            machine->findnew_thread(static_cast<int32_t>(previous.pid), static_cast<int32_t>(previous.tid));
        const uint64_t tried = unwinder.stats().samples;
        const uint64_t served = unwinder.stats().ahead;
        unwinder.append_user_frames(ea->attr, pt, previous, 127, &frames);
        std::string again = "previous:";
        for (const session::CallchainFrame& f : frames) again += fmt::format(" {:x}", f.ip);
        out.samples.push_back(again);
        // Counted when the unwinder tried (a thread retired since has no maps left to try with)
        // in place. Two records of one thread at the same time with the same registers (seen in
        // these recordings now and then) share their key, and the earlier one is then rightly
        // served the frames unwound ahead for the later one: that counts as ahead.
        if (unwinder.stats().samples > tried && unwinder.stats().ahead == served) ++out.previous;
      }
      if (s.stack_dyn_size) {
        previous = s;
        previous_stack.assign(s.stack_user.begin(), s.stack_user.end());
        previous.stack_user = previous_stack;
      }
    };
    const analysis::ReplayResult result = analysis::replay(*reader, *machine, symbolizer, nullptr, h);
    EXPECT_TRUE(result.problems.empty());
    out.stats = unwinder.stats();
    return out;
  };
  const Run one = replay_with(1, Ahead::kAlways);
  ASSERT_GT(one.real, 100u);
  EXPECT_GT(one.deep, one.real / 2) << "set-up: the stacks did not unwind";
  EXPECT_GT(one.previous, 100u);
  EXPECT_EQ(one.stats.ahead, 0u) << "one thread unwinds in place";
  const Run always = replay_with(2, Ahead::kAlways);
  // Every delivered sample from ahead, every earlier one again in place.
  EXPECT_EQ(always.stats.ahead + always.previous, always.stats.samples) << "samples unwound in place despite kAlways";
  EXPECT_GT(always.stats.ahead, 100u);
  EXPECT_EQ(always.samples, one.samples);
  const Run when_behind = replay_with(2, Ahead::kWhenBehind);
  EXPECT_EQ(when_behind.samples, one.samples);
}

TEST(JobsE2E, PipeFileAndStandardInputPrintTheSameForEveryJobCount) {
  TPERF_REQUIRE_RECORDING(rec, recording("fp", "-g"));
  TempDir dir;
  const std::string pipe_file = dir.file("pipe.data");
  CommandResult c = run(fmt::format("perf inject -i {} -o - > {}", shell_quote(rec.path), shell_quote(pipe_file)));
  ASSERT_EQ(c.status, 0) << "set-up failed: perf inject: " << c.err;
  EXPECT_GT(expect_same_for_every_j(pipe_file), 100u);
  for (const char* cmd : {"report --stdio", "script"}) {
    const CommandResult one = run(fmt::format("{} {} -j 1 -i - < {}", TPERF_BINARY, cmd, shell_quote(pipe_file)));
    const CommandResult two = run(fmt::format("{} {} -j 2 -i - < {}", TPERF_BINARY, cmd, shell_quote(pipe_file)));
    EXPECT_EQ(one.status, 0) << one.err;
    EXPECT_EQ(one.out, two.out) << cmd;
    EXPECT_FALSE(one.out.empty()) << cmd;
  }
}

// The sample id fields of a record of thread `tid` (its own process) at `time`, event id 7.
SampleId sid_at(int32_t tid, uint64_t time) {
  SampleId sid;
  sid.pid = sid.tid = static_cast<uint32_t>(tid);
  sid.time = time;
  sid.id = 7;
  return sid;
}

// A COMM record naming thread `tid` (its own process) at `time`.
void write_comm(Writer& w, const RecordBuilder& rb, int32_t tid, const char* name, uint64_t time) {
  w.write_record(rb.comm({.pid = tid, .tid = tid, .comm = name}, sid_at(tid, time)));
}

// `n` kernel samples of event id 7 in thread `tid` (its own process), one a nanosecond from
// `from` on, each at the next kernel address 16 bytes on.
void write_kernel_samples(Writer& w, const RecordBuilder& rb, int32_t tid, uint64_t from, int n) {
  for (int i = 0; i < n; ++i) {
    Sample s;
    s.pid = s.tid = static_cast<uint32_t>(tid);
    s.time = from + static_cast<uint64_t>(i);
    s.period = 100;
    s.id = 7;
    s.ip = 0xffffffff81000000ULL + 0x10 * static_cast<uint64_t>(i);
    w.write_record(rb.sample(s, kMiscKernel));
  }
}

// Samples of one event, an EVENT_UPDATE in the data that renames it, more samples: perf applies
// the new name when it reads the record, and so must tperf, on either thread count.
TEST(JobsE2E, EventRenamedInTheDataAsPerf) {
  TPERF_REQUIRE_PROGRAM("perf");
  PerfEventAttr attr = cpu_clock_attr(kSampleIp | kSampleTid | kSampleTime | kSamplePeriod | kSampleId);
  RecordBuilder rb(attr);
  TempDir dir;
  const std::string path = dir.file("renamed.data");
  Writer w;
  w.open(path);
  w.add_attr(attr, {7}, "cpu-clock");
  write_comm(w, rb, 42, "renamed", 1000);
  auto samples = [&](uint64_t from, int n) { write_kernel_samples(w, rb, 42, from, n); };
  // Enough samples before the rename that the reading thread has shipped batches of them.
  samples(2000, 20000);
  w.write_record(rb.finished_round());
  w.write_record(rb.event_update_name(7, "renamed-clock"));
  samples(40000, 20000);
  w.finish();
  for (const char* fields : {"event", "comm,tid,time,event,ip"}) {
    SCOPED_TRACE(fields);
    for (int j : {1, 2}) {
      ComparedOutputs c = compare_outputs(fmt::format("perf script -F {} -i {}", fields, shell_quote(path)),
                                          fmt::format("{} script -j {} -F {} -i {}", TPERF_BINARY, j, fields,
                                                      shell_quote(path)),
                                          path);
      EXPECT_EQ(c.diff, "") << "-j " << j;
      EXPECT_EQ(c.tperf_status, 0) << c.tperf_err;
      EXPECT_EQ(c.perf_lines, 40000u);
    }
  }
  EXPECT_GT(expect_same_for_every_j(path), 0u);
}

// A file made with our writer at `path`: cpu-clock samples of event id 7 with callchains (ip,
// tid, time, period, id), for the tests below to fill and finish().
struct ChainFile {
  explicit ChainFile(const std::string& path) {
    w.open(path);
    w.add_attr(attr, {7}, "cpu-clock");
  }
  PerfEventAttr attr = cpu_clock_attr(kSampleIp | kSampleTid | kSampleTime | kSamplePeriod | kSampleId | kSampleCallchain);
  RecordBuilder rb{attr};
  Writer w;
};

// `tperf report --stdio` of `path` in each of `modes`, for each -j of `jobs`, prints what perf 6.1
// prints (-q: without perf's random tip), and perf prints more than `min_lines` lines.
void expect_reports_as_perf(const std::string& path, std::initializer_list<const char*> modes,
                            std::initializer_list<int> jobs, size_t min_lines) {
  for (const char* mode : modes) {
    for (int j : jobs) {
      SCOPED_TRACE(fmt::format("{} -j {}", mode, j));
      ComparedOutputs c = compare_outputs(fmt::format("perf report --stdio -q {} -i {}", mode, shell_quote(path)),
                                          fmt::format("{} report --stdio -q --no-unwind-summary -j {} {} -i {}",
                                                      TPERF_BINARY, j, mode, shell_quote(path)),
                                          path);
      EXPECT_EQ(c.diff, "");
      EXPECT_EQ(c.tperf_status, 0) << c.tperf_err;
      EXPECT_GT(c.perf_lines, min_lines);
    }
  }
}

// report formats its rows on -j threads once there are enough of them (a window of chunks side
// by side, written in order): 6,000 entries (distinct addresses of two threads), each with a
// callchain graph, must print as perf 6.1 prints them, in both modes and for every -j.
TEST(JobsE2E, ManyReportRowsFormattedOnThreadsAsPerf) {
  TPERF_REQUIRE_PROGRAM("perf");
  TempDir dir;
  const std::string path = dir.file("rows.data");
  ChainFile file(path);
  Writer& w = file.w;
  const RecordBuilder& rb = file.rb;
  write_comm(w, rb, 42, "first", 1000);
  write_comm(w, rb, 43, "second", 1000);
  for (int i = 0; i < 6000; ++i) {
    Sample s;
    s.pid = s.tid = i % 2 ? 43 : 42;
    s.time = 2000 + static_cast<uint64_t>(i);
    s.period = 100 + static_cast<uint64_t>(i % 7);  // ties and differences in the output sort
    s.id = 7;
    s.ip = 0x400000 + 0x10 * static_cast<uint64_t>(i);
    s.callchain = {kContextUser, s.ip, 0x500000 + 0x10 * static_cast<uint64_t>(i % 5),
                   0x600000 + 0x10 * static_cast<uint64_t>(i % 3)};
    w.write_record(rb.sample(s, kMiscUser));
  }
  w.finish();
  // Graphs down to 0% (each entry holds 1/6000 of the samples). Every address an entry of its
  // own (with its graph): more rows than one window of chunks.
  expect_reports_as_perf(path, {"-g graph,0", "--no-children -g graph,0", "--no-children -g caller,0", "-s comm,sym -n"},
                         {1, 2, 3}, 6000);
}

// A graph node with many children keeps them sorted by their first frame's id; a node split
// hands them to its tail. Callers A > B with 24 callees, first seen (their frame ids given) in one
// order and hung under B in another, so that sorted inserts land in the middle; then a chain that
// ends at A splits the A-B node above its children, and more chains find and add children of the
// tail. perf 6.1 prints the graphs of every mode, and tperf must print them alike for every -j.
TEST(JobsE2E, GraphNodesWithManyChildrenAsPerf) {
  TPERF_REQUIRE_PROGRAM("perf");
  TempDir dir;
  const std::string path = dir.file("children.data");
  ChainFile file(path);
  Writer& w = file.w;
  const RecordBuilder& rb = file.rb;
  write_comm(w, rb, 42, "tree", 1000);
  constexpr uint64_t kA = 0x500000, kB = 0x510000, kD = 0x520000;
  auto callee = [](unsigned k) { return 0x700000 + 0x40 * static_cast<uint64_t>(k); };
  uint64_t time = 2000;
  auto sample = [&](std::vector<uint64_t> chain, uint64_t period) {
    Sample s;
    s.pid = s.tid = 42;
    s.time = time++;
    s.period = period;
    s.id = 7;
    s.ip = chain.front();
    s.callchain = {kContextUser};
    s.callchain.insert(s.callchain.end(), chain.begin(), chain.end());
    w.write_record(rb.sample(s, kMiscUser));
  };
  // The callees alone, k = 5, 12, 19, 2, ... (every k once: 7 and 24 have no common divisor).
  for (unsigned i = 0; i < 24; ++i) sample({callee((5 + 7 * i) % 24)}, 50);
  // Under A > B in the order k = 23, 22, ..., 0, each with a weight of its own.
  for (unsigned i = 0; i < 24; ++i) {
    const unsigned k = 23 - i;
    sample({callee(k), kB, kA}, 1000 + 37 * k);
  }
  // A alone: the node A-B splits into A and B, and B takes the 24 children.
  sample({kA}, 700);
  // Found again under the split node, on the way to a deeper frame (a chain seen before would add
  // to its stack's weight, not go through the tree again), and six new ones (ids above every other).
  for (unsigned k = 0; k < 24; k += 5) sample({kD, callee(k), kB, kA}, 300 + k);
  for (unsigned k = 24; k < 30; ++k) sample({callee(k), kB, kA}, 900 + 11 * k);
  w.finish();
  expect_reports_as_perf(path, {"-g graph,0", "-g caller,0", "-g folded,0", "--no-children -g caller,0",
                                "--no-children -g graph,0"},
                         {1, 2}, 30);
}

// report adds its batches of distinct stacks to the hists on a thread of its own while the next
// batch fills (-j 2 and more), and decides, as the samples come in, whether samples alike may be
// added together: only while perf's comparison of entries is an order. 6,000 samples of 3,000
// program stacks, each stack twice, 100 samples apart; then 6,000 random walks through garbage
// addresses on both sides of 2^63, where perf's comparison is no order (report_garbage_frames_test.cc:
// there perf's walk misses equal entries). A batch holds 16K frames: with chains, the file makes
// two or three.
TEST(JobsE2E, StacksAddedWhileTheNextBatchFillsAsPerf) {
  TPERF_REQUIRE_PROGRAM("perf");
  TempDir dir;
  const std::string path = dir.file("batches.data");
  ChainFile file(path);
  Writer& w = file.w;
  const RecordBuilder& rb = file.rb;
  write_comm(w, rb, 42, "adder", 1000);
  // Garbage addresses of broken walks, about half of them above 2^63 (raw mt19937 output, the
  // same everywhere), and four of the program's.
  std::mt19937 rng(7);
  std::vector<uint64_t> addrs = {0x401100, 0x401200, 0x401300, 0x401400};
  for (int g = 0; g < 24; ++g) addrs.push_back(static_cast<uint64_t>(rng()) << 32 | rng());
  for (uint64_t i = 0; i < 12000; ++i) {
    Sample s;
    s.pid = s.tid = 42;
    s.time = 2000 + i;
    s.period = 100 + i % 7;
    s.id = 7;
    if (i < 6000) {
      // Blocks of 200 samples: 100 stacks, then the same 100 again.
      const uint64_t k = i / 200 * 100 + i % 100;
      s.callchain = {kContextUser, 0x400000 + 0x10 * k, 0x500000 + 0x10 * (k % 17), 0x600000 + 0x10 * (k % 5)};
    } else {
      // Random walks of 1 to 6 frames.
      s.callchain = {kContextUser};
      const size_t depth = 1 + rng() % 6;
      for (size_t d = 0; d < depth; ++d) s.callchain.push_back(addrs[rng() % addrs.size()]);
    }
    s.ip = s.callchain[1];
    w.write_record(rb.sample(s, kMiscUser));
  }
  w.finish();
  expect_reports_as_perf(path, {"-g none", "-s sym -g none", "--no-children -s sym -g caller,0", "-g graph,0"},
                         {1, 2}, 2500);
}

// Samples stamped well after their thread's EXIT (as AUX decoding makes them), then the ends of
// rounds that release the thread: perf 6.1 prints them with the thread's comm, and so must every
// -j. With -j 2 and more the samples wait in batches to be formatted, with copies of their threads
// made when they were held: a round's end may release the thread meanwhile (a batch that held the
// machine's thread instead would be a use-after-free under AddressSanitizer, and without it a wrong
// or garbled comm).
TEST(JobsE2E, SamplesAfterTheirThreadsExitAsPerfForEveryJobCount) {
  TPERF_REQUIRE_PROGRAM("perf");
  PerfEventAttr attr = cpu_clock_attr(kSampleIp | kSampleTid | kSampleTime | kSamplePeriod | kSampleId);
  RecordBuilder rb(attr);
  TempDir dir;
  const std::string path = dir.file("late.data");
  Writer w;
  w.open(path);
  w.add_attr(attr, {7}, "cpu-clock");
  auto samples = [&](int32_t tid, uint64_t from, int n) { write_kernel_samples(w, rb, tid, from, n); };
  const uint64_t kSecond = 1000000000;
  write_comm(w, rb, 50, "leaves-early", 100);
  write_comm(w, rb, 60, "stays", 200);
  TaskEvent exit;
  exit.pid = exit.tid = 50;
  exit.ppid = exit.ptid = 1;
  exit.time = 1 * kSecond;
  w.write_record(rb.exit(exit, sid_at(50, exit.time)));
  w.write_record(rb.finished_round());
  // Two rounds of late samples; the end of the second releases thread 50 (its exit is more than
  // a second older than the first's last sample). Fewer than a batch, then more than one.
  samples(50, 5 * kSecond / 2, 300);
  w.write_record(rb.finished_round());
  samples(50, 3 * kSecond, 1500);
  w.write_record(rb.finished_round());
  samples(60, 4 * kSecond, 1500);
  w.write_record(rb.finished_round());
  samples(60, 5 * kSecond, 10);
  w.finish();
  for (int j : {1, 2, 3}) {
    SCOPED_TRACE(j);
    ComparedOutputs c = compare_outputs(fmt::format("perf script -F comm,tid,time,ip -i {}", shell_quote(path)),
                                        fmt::format("{} script -j {} -F comm,tid,time,ip -i {}", TPERF_BINARY, j,
                                                    shell_quote(path)),
                                        path);
    EXPECT_EQ(c.diff, "");
    EXPECT_EQ(c.tperf_status, 0) << c.tperf_err;
    EXPECT_EQ(c.perf_lines, 3310u);
  }
  const CommandResult late =
      run(fmt::format("{} script -j 2 -F comm -i {} | grep -c leaves-early", TPERF_BINARY, shell_quote(path)));
  EXPECT_EQ(std::atoi(late.out.c_str()), 1800);
  EXPECT_GT(expect_same_for_every_j(path), 0u);
}

// With -j 2 and more, script holds samples in batches while the machine goes on: a batch keeps
// copies of its samples' threads and maps as they were. Here the records that follow samples still
// held change those very processes: a map replaced by another file, an exec (new comm, maps
// cleared), a fork that copies the maps, an exit and the rounds that release the thread, a thread
// whose tid comes back in a new process. Every sample must print the comm and the DSOs of its own
// time, as perf 6.1 prints them, for every -j.
TEST(JobsE2E, HeldSamplesPrintTheThreadsAndMapsOfTheirTime) {
  TPERF_REQUIRE_PROGRAM("perf");
  TempDir dir;
  const std::string path = dir.file("changes.data");
  ChainFile file(path);
  Writer& w = file.w;
  const RecordBuilder& rb = file.rb;
  const uint64_t kSecond = 1000000000;
  uint64_t time = 1000;
  auto map = [&](int32_t pid, uint64_t addr, const char* name) {
    Mmap2Event m;
    m.pid = m.tid = pid;
    m.addr = addr;
    m.len = 0x10000;
    m.filename = name;
    w.write_record(rb.mmap2(m, sid_at(pid, time++)));
  };
  auto comm = [&](int32_t tid, const char* name, bool exec) {
    w.write_record(rb.comm({.pid = tid, .tid = tid, .comm = name, .exec = exec}, sid_at(tid, time++)));
  };
  auto task = [&](bool fork, int32_t pid, int32_t ppid) {
    TaskEvent e;
    e.pid = e.tid = pid;
    e.ppid = e.ptid = ppid;
    e.time = time++;
    w.write_record(fork ? rb.fork(e, sid_at(pid, e.time)) : rb.exit(e, sid_at(pid, e.time)));
  };
  // `n` samples of each of `tids` in turn, each with a three-frame chain in [base, base + 0x10000).
  auto samples = [&](std::initializer_list<int32_t> tids, uint64_t base, int n) {
    for (int i = 0; i < n; ++i) {
      for (int32_t tid : tids) {
        Sample s;
        s.pid = s.tid = static_cast<uint32_t>(tid);
        s.time = time++;
        s.period = 100;
        s.id = 7;
        s.ip = base + 0x10 * static_cast<uint64_t>(i % 50);
        s.callchain = {kContextUser, s.ip, base + 0x1000 + 0x8 * static_cast<uint64_t>(i % 7), base + 0x2000};
        w.write_record(rb.sample(s, kMiscUser));
      }
    }
  };
  comm(42, "first", false);
  map(42, 0x400000, "/nonexistent/tperf-a.so");
  comm(43, "other", false);
  map(43, 0x400000, "/nonexistent/tperf-c.so");
  samples({42, 43}, 0x400000, 150);
  map(42, 0x400000, "/nonexistent/tperf-b.so");  // replaces a.so under samples still held
  samples({42, 43}, 0x400000, 100);
  comm(42, "second", true);  // exec: the maps go
  map(42, 0x500000, "/nonexistent/tperf-d.so");
  samples({42, 43}, 0x500000, 100);
  task(true, 44, 42);  // a child with 42's maps
  samples({44, 42}, 0x500000, 50);
  task(false, 42, 1);
  w.write_record(rb.finished_round());
  samples({44, 43}, 0x500000, 50);
  time += 3 * kSecond;  // rounds past 42's exit release it
  w.write_record(rb.finished_round());
  samples({43}, 0x400000, 20);
  w.write_record(rb.finished_round());
  task(true, 42, 43);  // tid 42 again, a child of 43 with its maps
  comm(42, "third", false);
  samples({42, 43, 44}, 0x400000, 30);
  w.finish();
  for (int j : {1, 2, 3}) {
    SCOPED_TRACE(j);
    // Without a symbol field the samples held are not formatted before each map comes (nothing
    // is looked up then); they print what perf prints all the same.
    for (const char* fields : {"comm,tid,time,ip,sym,dso", "comm,tid,time,ip"}) {
      SCOPED_TRACE(fields);
      ComparedOutputs c = compare_outputs(fmt::format("perf script -F {} -i {}", fields, shell_quote(path)),
                                          fmt::format("{} script -j {} -F {} -i {}", TPERF_BINARY, j, fields,
                                                      shell_quote(path)),
                                          path);
      EXPECT_EQ(c.diff, "");
      EXPECT_EQ(c.tperf_status, 0) << c.tperf_err;
      // 1,010 samples of five lines each (the line start, three frames, a blank line).
      EXPECT_EQ(c.perf_lines, 5050u);
    }
  }
  // The samples by comm and the DSO of their leaf, as perf prints them (checked above): 42's
  // before and after its map was replaced, the child's after the exec (perf keeps the maps of
  // before the exec: b.so at 0x400000 still), the new 42's with 43's maps.
  const CommandResult by_dso = run(fmt::format(
      "{} script -j 2 -F comm,ip,dso -i {} | awk '$1 ~ /^[a-z]/ {{c = $1; getline; print c, $2}}' | sort | uniq -c",
      TPERF_BINARY, shell_quote(path)));
  EXPECT_EQ(by_dso.out,
            "    150 first (/nonexistent/tperf-a.so)\n"
            "    100 first (/nonexistent/tperf-b.so)\n"
            "    300 other (/nonexistent/tperf-c.so)\n"
            "    150 other ([unknown])\n"
            "     30 second (/nonexistent/tperf-b.so)\n"
            "    250 second (/nonexistent/tperf-d.so)\n"
            "     30 third (/nonexistent/tperf-c.so)\n");
  EXPECT_GT(expect_same_for_every_j(path), 0u);
}

}  // namespace
}  // namespace tperf::test::e2e
