// Fresh recordings made with the system perf at test time (cpu-clock: this must run on VMs
// without a hardware PMU), read to the end with perfdata::Reader, every SAMPLE decoded and held
// against what perf 6.1 prints for the same file:
//  - `perf report -D`: the list of records (offset, size, type) and, per sample, the header
//    fields, the raw callchain (context markers included), user regs, user stack and data_src;
//  - `perf script -G --ns -F pid,tid,cpu,time,period,event,addr,ip`: the event each sample
//    belongs to (perf resolves it through the ids), plus uregs, switch events and tracepoint
//    fields where the recording has them.
// perf prints in time order and we read in file order, so the two sides are compared as
// multisets of one-line keys. comm is not compared: perf takes it from its thread model.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <thread>
#include <vector>

#include "e2e/recording_util.h"
#include "perfdata/abi.h"
#include "perfdata/reader.h"
#include "perfdata/records.h"
#include "perfdata/sample.h"
#include "test_util.h"

namespace tperf::perfdata {
namespace {

namespace fs = std::filesystem;
using test::shell_quote;
using test::e2e::CommandResult;
using test::e2e::DumpSample;
using test::e2e::multiset_diff;
using test::e2e::Recording;
using test::e2e::run;

enum class Layout { kFile, kPipe, kDirectory };

// Runs `perf record` once per test program. `args` has {out} for the output path and {w} for
// the workload binary.
const Recording& recording(const std::string& name, const std::string& args) {
  static std::map<std::string, Recording> made;
  auto it = made.find(name);
  if (it != made.end()) return it->second;
  Recording rec;
  std::string werr;
  std::string w = test::e2e::workload("spin", &werr);
  if (w.empty()) {
    rec.error = werr;
  } else {
    std::string path = test::e2e::scratch_dir() + "/" + name;
    rec = test::e2e::record_with_perf("timeout 60 " + fmt::format(fmt::runtime(args), fmt::arg("out", shell_quote(path)),
                                                                  fmt::arg("w", shell_quote(w))),
                                      path);
  }
  return made.emplace(name, rec).first->second;
}

#define REQUIRE_RECORDING(var, name, args) TPERF_REQUIRE_RECORDING(var, recording(name, args))

// The -F fields perf script can print for every event of the file.
struct ScriptFields {
  bool cpu = false;
  bool addr = false;
};

// What tperf reads from a recording, as keys comparable with perf's text.
struct Decoded {
  ScriptFields fields;                    // what perf script can print for every event of the file
  std::vector<std::string> records;       // "file off type size", as `perf report -D` lists them
  std::vector<std::string> dump_samples;  // dump_sample_key()
  std::vector<std::string> script_samples;
  std::vector<std::string> switches;
  std::vector<std::string> uregs;
  std::map<std::string, size_t> samples_by_event;
  size_t samples = 0;
  size_t longest_chain = 0;
  std::vector<std::string> problems;                 // reader errors, decode failures, bytes a decode left over
  std::vector<std::pair<Sample, std::string>> kept;  // samples kept for the caller (raw data copied)
  std::vector<std::vector<uint8_t>> kept_raw;
};

ScriptFields script_fields(const Reader& r) {
  ScriptFields f{true, true};
  for (const EventAttr& a : r.attrs()) {
    f.cpu = f.cpu && a.attr.has(kSampleCpu);
    f.addr = f.addr && a.attr.has(kSampleAddr);
  }
  return f;
}

std::string file_name(Layout layout, uint32_t file_index) {
  if (layout != Layout::kDirectory) return "-";
  return file_index == 0 ? "data" : fmt::format("data.{}", file_index - 1);
}

std::string record_key(const std::string& file, uint64_t offset, uint32_t type, uint32_t size, bool with_offset) {
  if (!with_offset) return fmt::format("{} type={} size={:#x}", file, type, size);
  return fmt::format("{} {:#x} type={} size={:#x}", file, offset, type, size);
}

std::string script_key(int32_t pid, int32_t tid, int32_t cpu, uint64_t time, uint64_t period, const std::string& event,
                       uint64_t addr, uint64_t ip, const ScriptFields& f) {
  std::string k = fmt::format("{}/{} ", pid, tid);
  if (f.cpu) k += fmt::format("[{}] ", cpu);
  k += fmt::format("{} period={} {}: ", time, period, event);
  if (f.addr) k += fmt::format("addr={:#x} ", addr);
  k += fmt::format("ip={:#x}", ip);
  return k;
}

std::string switch_key(int32_t pid, int32_t tid, int32_t cpu, uint64_t time, bool out, bool preempt, int32_t np_pid,
                       int32_t np_tid) {
  return fmt::format("{}/{} [{}] {} {}{} {}/{}", pid, tid, cpu, time, out ? "OUT" : "IN",
                     out && preempt ? " preempt" : "", np_pid, np_tid);
}

std::string uregs_key(int32_t pid, int32_t tid, uint64_t time, uint64_t ip, uint64_t abi,
                      const std::vector<uint64_t>& values) {
  std::string k = fmt::format("{}/{} {} ip={:#x} abi={} [", pid, tid, time, ip, abi);
  for (size_t i = 0; i < values.size(); ++i) k += fmt::format("{}{:#x}", i ? "," : "", values[i]);
  return k + "]";
}

struct CheckOptions {
  bool switch_events = false;  // compare SWITCH_CPU_WIDE records with perf script --show-switch-events
  bool with_offsets = true;    // compare record offsets (see ZstdRecordOffsets for why they may not)
  std::string keep_event;      // samples of this event are kept whole in Decoded::kept
};

struct ScriptSampleFields {
  int32_t pid, tid, cpu;
  uint64_t time, period;
  std::string event;
  uint64_t addr, ip;
};

// Reads every record, decodes every SAMPLE (and SWITCH_CPU_WIDE), and builds the keys.
Decoded decode_all(Reader& r, Layout layout, const CheckOptions& o) {
  Decoded d;
  std::vector<ScriptSampleFields> script;  // keyed once the attrs are all known (pipe mode)
  Record rec;
  Sample s, check;
  try {
    while (r.next(rec)) {
      // perf's dump lists neither the COMPRESSED records it unpacks nor the ATTR records at the
      // start of a pipe. In a directory it prints nothing at all for the first record of each
      // data.N, though it processes it (perf script shows that sample, or that COMM's comm).
      bool unprinted = layout == Layout::kDirectory && rec.file_index > 0 && rec.offset == 0;
      bool listed = rec.type != kRecordCompressed && rec.type != kRecordCompressed2 &&
                    !(layout == Layout::kPipe && rec.type == kRecordHeaderAttr) && !unprinted;
      if (listed) {
        d.records.push_back(
            record_key(file_name(layout, rec.file_index), rec.offset, rec.type, rec.size, o.with_offsets));
      }
      if (rec.type == kRecordSwitchCpuWide) {
        SwitchCpuWideEvent e = decode_switch(rec.body(), rec.misc, true, r.swapped(), rec.offset + 8);
        Sample id;
        if (!r.decode_sample_id(rec, id)) {
          d.problems.push_back(fmt::format("SWITCH_CPU_WIDE at {:#x}: no sample_id", rec.offset));
          continue;
        }
        d.switches.push_back(switch_key(static_cast<int32_t>(id.pid), static_cast<int32_t>(id.tid),
                                        static_cast<int32_t>(id.cpu), id.time, e.out, e.preempt, e.next_prev_pid,
                                        e.next_prev_tid));
        continue;
      }
      if (rec.type != kRecordSample) continue;
      ++d.samples;
      const EventAttr* ea = r.attr_of(rec);
      if (!ea) {
        d.problems.push_back(fmt::format("sample at {:#x}: no attr", rec.offset));
        continue;
      }
      r.decode_sample(rec, s);
      // The kernel writes exactly the fields of sample_type: nothing may be left over.
      size_t left = decode_sample(rec.body(), r.swapped(), rec.offset + 8, ea->attr, check);
      if (left != 0) d.problems.push_back(fmt::format("sample at {:#x}: {} bytes left undecoded", rec.offset, left));

      DumpSample ds;
      ds.cpu = s.has(kSampleCpu) ? static_cast<int32_t>(s.cpu) : -1;
      ds.time = s.time;
      ds.offset = rec.offset;
      ds.size = rec.size;
      ds.misc = rec.misc;
      ds.pid = static_cast<int32_t>(s.pid);
      ds.tid = static_cast<int32_t>(s.tid);
      ds.ip = s.ip;
      ds.period = s.period;
      ds.addr = s.addr;
      ds.has_chain = s.has(kSampleCallchain);
      ds.chain = s.callchain;
      ds.has_regs = s.has(kSampleRegsUser) && s.regs_user.abi != 0;
      if (ds.has_regs) {
        ds.regs_abi = s.regs_user.abi == 1 ? "32-bit" : s.regs_user.abi == 2 ? "64-bit" : "?";
        ds.regs_mask = s.regs_user.mask;
        ds.regs = s.regs_user.regs;
      }
      ds.has_ustack = s.has(kSampleStackUser);
      if (ds.has_ustack) {
        ds.ustack_size = s.stack_user_size ? s.stack_dyn_size : 0;
        ds.ustack_offset = static_cast<uint64_t>(s.stack_user.data() - rec.bytes.data()) - 8;
      }
      ds.has_data_src = s.has(kSampleDataSrc);
      ds.data_src = s.data_src;
      if (!unprinted) d.dump_samples.push_back(test::e2e::dump_sample_key(ds, o.with_offsets));
      script.push_back({ds.pid, ds.tid, ds.cpu, s.time, s.period, ea->name, s.addr, s.ip});
      if (s.has(kSampleRegsUser)) {
        d.uregs.push_back(uregs_key(ds.pid, ds.tid, s.time, s.ip, s.regs_user.abi, s.regs_user.regs));
      }
      ++d.samples_by_event[ea->name];
      d.longest_chain = std::max(d.longest_chain, s.callchain.size());
      if (!o.keep_event.empty() && ea->name == o.keep_event) {
        d.kept_raw.emplace_back(s.raw.begin(), s.raw.end());
        d.kept.emplace_back(s, ea->name);
        // The spans point into the record, gone after next().
        d.kept.back().first.raw = {};
        d.kept.back().first.stack_user = {};
        d.kept.back().first.aux = {};
      }
    }
  } catch (const std::exception& e) {
    d.problems.push_back(std::string("reading stopped: ") + e.what());
  }
  for (const FormatError& e : r.errors()) d.problems.push_back(std::string("reader error: ") + e.what());
  d.fields = script_fields(r);
  for (const auto& x : script) {
    d.script_samples.push_back(script_key(x.pid, x.tid, x.cpu, x.time, x.period, x.event, x.addr, x.ip, d.fields));
  }
  return d;
}

// What perf prints for the same recording.
struct PerfSide {
  std::vector<std::string> records;
  std::vector<std::string> dump_samples;
  std::vector<std::string> script_samples;
  std::vector<std::string> switches;
  std::map<std::string, size_t> samples_by_event;
  std::vector<std::string> unparsed;  // perf script lines that were neither a sample nor a switch
  std::string error;
};

PerfSide perf_side(const std::string& path, Layout layout, const ScriptFields& f, const CheckOptions& o) {
  PerfSide p;
  // The hex dumps of every record (lines starting with ". ") are of no use here and make most
  // of the text.
  CommandResult dump = run("timeout 60 perf report -D -i " + shell_quote(path) + " | grep -v -E '^[.]( |$)'");
  test::e2e::PerfDump pd = test::e2e::parse_report_dump(dump.out);
  if (pd.records.empty()) p.error = "perf report -D printed no records: " + dump.err;
  // Pipe mode: perf counts offsets from the end of the 16-byte pipe header, tperf from the
  // start of the file.
  uint64_t shift = layout == Layout::kPipe ? kPipeHeaderSize : 0;
  for (const auto& r : pd.records) {
    std::string file = "-";
    if (layout == Layout::kDirectory) file = r.file.substr(r.file.rfind('/') + 1);
    p.records.push_back(record_key(file, r.offset + shift, r.type, r.size, o.with_offsets));
  }
  for (DumpSample s : pd.samples) {
    s.offset += shift;
    p.dump_samples.push_back(test::e2e::dump_sample_key(s, o.with_offsets));
  }

  std::string fields = "pid,tid";
  if (f.cpu) fields += ",cpu";
  fields += ",time,period,event";
  if (f.addr) fields += ",addr";
  fields += ",ip";
  CommandResult script = run("timeout 60 perf script -i " + shell_quote(path) + " -G --ns -F " + fields +
                             (o.switch_events ? " --show-switch-events" : ""));
  if (script.status != 0) p.error += "perf script failed: " + script.err;
  std::istringstream in(script.out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    test::e2e::ScriptSample s;
    test::e2e::ScriptSwitch sw;
    if (test::e2e::parse_script_sample(line, f.cpu, f.addr, &s)) {
      p.script_samples.push_back(script_key(s.pid, s.tid, s.cpu, s.time, s.period, s.event, s.addr, s.ip, f));
      ++p.samples_by_event[s.event];
    } else if (test::e2e::parse_script_switch(line, &sw)) {
      p.switches.push_back(
          switch_key(sw.pid, sw.tid, sw.cpu, sw.time, sw.out, sw.preempt, sw.next_prev_pid, sw.next_prev_tid));
    } else {
      p.unparsed.push_back(line);
    }
  }
  return p;
}

void expect_matches(const Decoded& d, const PerfSide& p) {
  EXPECT_TRUE(p.error.empty()) << p.error;
  if (!d.problems.empty()) {
    std::string first;
    for (size_t i = 0; i < d.problems.size() && i < 5; ++i) first += "\n  " + d.problems[i];
    ADD_FAILURE() << d.problems.size() << " problems reading the file, first:" << first;
  }
  EXPECT_TRUE(p.unparsed.empty()) << p.unparsed.size() << " perf script lines not understood, first: "
                                  << (p.unparsed.empty() ? "" : p.unparsed.front());
  EXPECT_GT(d.samples, 0u);
  EXPECT_EQ(d.dump_samples.size(), p.dump_samples.size());
  EXPECT_EQ(d.samples, p.script_samples.size());
  EXPECT_EQ("", multiset_diff(d.records, p.records)) << "records (file, offset, type, size) vs perf report -D";
  EXPECT_EQ("", multiset_diff(d.dump_samples, p.dump_samples)) << "samples vs perf report -D";
  EXPECT_EQ("", multiset_diff(d.script_samples, p.script_samples)) << "samples vs perf script";
  EXPECT_EQ(d.samples_by_event, p.samples_by_event);
}

// Reads `path` with the Reader and holds it against perf; returns what was decoded.
Decoded check_recording(const std::string& path, Layout layout, const CheckOptions& o = {}) {
  SCOPED_TRACE(path);
  std::unique_ptr<Reader> r;
  try {
    r = Reader::open(path);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "open: " << e.what();
    return {};
  }
  EXPECT_EQ(r->is_pipe(), layout == Layout::kPipe);
  EXPECT_EQ(r->is_directory(), layout == Layout::kDirectory);
  Decoded d = decode_all(*r, layout, o);
  PerfSide p = perf_side(path, layout, d.fields, o);
  expect_matches(d, p);
  if (o.switch_events) {
    EXPECT_EQ("", multiset_diff(d.switches, p.switches)) << "SWITCH_CPU_WIDE vs perf script";
  }
  return d;
}

// 1. Frame-pointer callchains: raw ips with their context markers, as perf report -D lists them.
TEST(PerfRecordings, FramePointerCallchains) {
  REQUIRE_RECORDING(rec, "fp.data", "perf record -q -e cpu-clock -F 2000 -g -o {out} -- {w} 0.2");
  Decoded d = check_recording(rec.path, Layout::kFile);
  // PERF_CONTEXT_USER and at least three frames of the workload (leaf, outer, main or worker).
  EXPECT_GE(d.longest_chain, 4u);
}

// 2. DWARF mode: REGS_USER, STACK_USER (dyn_size and where it sits), ADDR and DATA_SRC; the
// registers also against perf script -F uregs.
TEST(PerfRecordings, DwarfUserRegsAndStack) {
  REQUIRE_RECORDING(rec, "dwarf.data",
                    "perf record -q -e cpu-clock -F 1000 --call-graph dwarf,4096 -o {out} -- {w} 0.2");
  Decoded d = check_recording(rec.path, Layout::kFile);
  std::unique_ptr<Reader> r = Reader::open(rec.path);
  ASSERT_EQ(r->attrs().size(), 1u);
  EXPECT_TRUE(r->attrs()[0].attr.has(kSampleRegsUser | kSampleStackUser));
  EXPECT_EQ(r->attrs()[0].attr.sample_stack_user, 4096u);

  CommandResult script =
      run("timeout 60 perf script -i " + shell_quote(rec.path) + " -G --ns -F pid,tid,time,ip,uregs");
  ASSERT_EQ(script.status, 0) << script.err;
  std::vector<std::string> perf_uregs, unparsed;
  std::istringstream in(script.out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    test::e2e::ScriptRegs regs;
    if (test::e2e::parse_script_uregs(line, &regs)) {
      perf_uregs.push_back(uregs_key(regs.pid, regs.tid, regs.time, regs.ip, regs.abi, regs.values));
    } else {
      unparsed.push_back(line);
    }
  }
  EXPECT_TRUE(unparsed.empty()) << unparsed.front();
  EXPECT_EQ(d.uregs.size(), d.samples);
  EXPECT_EQ("", multiset_diff(d.uregs, perf_uregs)) << "user regs vs perf script -F uregs";
}

// 3. zstd: perf 6.1 writes COMPRESSED (81) records; a one-page ring buffer makes a score of them,
// with sizes that are not multiples of 8. perf compresses what it copies out of the ring buffer
// in pieces, and a record that wraps around the end of the buffer is split between two
// COMPRESSED records.
const char kZstdRecord[] = "perf record -q -z -m 1 -e cpu-clock -F 4000 -g -o {out} -- {w} 0.3";

TEST(PerfRecordings, ZstdCompressed) {
  REQUIRE_RECORDING(rec, "zstd.data", kZstdRecord);
  CheckOptions o;
  o.with_offsets = false;  // ZstdRecordOffsets holds those
  Decoded d = check_recording(rec.path, Layout::kFile, o);
  EXPECT_GT(d.samples, 100u);

  // Without decompression the COMPRESSED records come out as they are, and no sample does.
  std::unique_ptr<Reader> raw = Reader::open(rec.path, Reader::Options{false});
  Record r;
  uint64_t compressed = 0, samples = 0;
  while (raw->next(r)) {
    compressed += r.type == kRecordCompressed;
    samples += r.type == kRecordSample;
  }
  EXPECT_GE(compressed, 1u);
  EXPECT_EQ(samples, 0u);
  EXPECT_TRUE(raw->errors().empty());
}

// The offset of a record unpacked from COMPRESSED data is that of the COMPRESSED record it came
// out of; a record split between two COMPRESSED records comes out of the second one, and so do
// the records after it (perf report -D prints those offsets).
TEST(PerfRecordings, ZstdRecordOffsets) {
  REQUIRE_RECORDING(rec, "zstd.data", kZstdRecord);
  check_recording(rec.path, Layout::kFile);
}

// 4. System wide with context switch records (SWITCH_CPU_WIDE, from the dummy event), CPU in
// every sample.
TEST(PerfRecordings, SystemWideSwitchEvents) {
  REQUIRE_RECORDING(rec, "switch.data", "perf record -q -a --switch-events -e cpu-clock -F 500 -o {out} -- sleep 0.3");
  CheckOptions o;
  o.switch_events = true;
  Decoded d = check_recording(rec.path, Layout::kFile, o);
  EXPECT_FALSE(d.switches.empty());
}

const char kPipeRecord[] = "perf record -q -e cpu-clock -F 2000 -g -o - -- {w} 0.2 > {out}";

// 5a. Pipe mode written to a file, read as a file.
TEST(PerfRecordings, PipeModeFile) {
  REQUIRE_RECORDING(rec, "pipe.data", kPipeRecord);
  check_recording(rec.path, Layout::kPipe);
}

// 5b. The same bytes through a real pipe(2), fed by a thread in odd-sized writes: the reader
// sees short reads and no file size, and must give what it gives for the file (and perf).
TEST(PerfRecordings, PipeModeThroughPipe) {
  REQUIRE_RECORDING(rec, "pipe.data", kPipeRecord);
  std::ifstream in(rec.path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 16u);

  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  // A reader that stops early closes its end: the writer must see EPIPE, not die of SIGPIPE.
  struct sigaction ignore {
  }, old{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &old);
  std::thread feeder([&] {
    size_t off = 0;
    while (off < bytes.size()) {
      size_t n = std::min<size_t>(4093, bytes.size() - off);
      ssize_t w = ::write(fds[1], bytes.data() + off, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) break;
      off += static_cast<size_t>(w);
    }
    ::close(fds[1]);
  });
  Decoded piped;
  try {
    std::unique_ptr<Reader> r = Reader::from_fd(fds[0], "pipe", Reader::Options{});
    EXPECT_TRUE(r->is_pipe());
    piped = decode_all(*r, Layout::kPipe, CheckOptions{});
  } catch (const std::exception& e) {
    piped.problems.push_back(std::string("open: ") + e.what());
  }
  ::close(fds[0]);
  feeder.join();
  sigaction(SIGPIPE, &old, nullptr);

  PerfSide p = perf_side(rec.path, Layout::kPipe, piped.fields, CheckOptions{});
  expect_matches(piped, p);
}

// 6a. Two events with the same sample_type: perf uses ID; each sample must go to its own event.
TEST(PerfRecordings, TwoEventsSameSampleType) {
  REQUIRE_RECORDING(rec, "two.data", "perf record -q -e cpu-clock -e task-clock -F 2000 -o {out} -- {w} 0.2");
  Decoded d = check_recording(rec.path, Layout::kFile);
  EXPECT_GT(d.samples_by_event["cpu-clock"], 0u);
  EXPECT_GT(d.samples_by_event["task-clock"], 0u);
}

// 6b. Different sample types (one with callchains): perf adds IDENTIFIER to both.
TEST(PerfRecordings, TwoEventsDifferentSampleTypes) {
  REQUIRE_RECORDING(rec, "two-types.data",
                    "perf record -q -e cpu-clock/call-graph=fp/ -e task-clock -F 2000 -o {out} -- {w} 0.2");
  std::unique_ptr<Reader> r = Reader::open(rec.path);
  ASSERT_EQ(r->attrs().size(), 2u);
  EXPECT_TRUE(r->attrs()[0].attr.has(kSampleIdentifier));
  EXPECT_NE(r->attrs()[0].attr.sample_type, r->attrs()[1].attr.sample_type);
  Decoded d = check_recording(rec.path, Layout::kFile);
  EXPECT_GT(d.samples_by_event["cpu-clock/call-graph=fp/"], 0u);
  EXPECT_GT(d.samples_by_event["task-clock"], 0u);
}

struct TraceField {
  size_t offset = 0;
  size_t size = 0;
};

// Field layout of a tracepoint from tracefs (the kernel's own description), empty when unreadable.
std::map<std::string, TraceField> tracepoint_format(const std::string& event_dir) {
  std::map<std::string, TraceField> fields;
  for (const char* root : {"/sys/kernel/tracing/events/", "/sys/kernel/debug/tracing/events/"}) {
    std::ifstream in(std::string(root) + event_dir + "/format");
    if (!in) continue;
    static const std::regex re(R"(field:.*?(\w+)(\[\d+\])?;\s*offset:(\d+);\s*size:(\d+);)");
    std::string line;
    while (std::getline(in, line)) {
      std::smatch m;
      if (std::regex_search(line, m, re)) fields[m[1]] = {std::stoul(m[3]), std::stoul(m[4])};
    }
    if (!fields.empty()) break;
  }
  return fields;
}

// 7. A tracepoint: RAW data. Its fields, read at the offsets tracefs gives, must be what perf
// script prints for each sample.
TEST(PerfRecordings, TracepointRawData) {
  REQUIRE_RECORDING(rec, "tracepoint.data", "perf record -q -e sched:sched_switch -a -o {out} -- sleep 0.2");
  CheckOptions o;
  o.keep_event = "sched:sched_switch";
  Decoded d = check_recording(rec.path, Layout::kFile, o);
  ASSERT_FALSE(d.kept.empty());

  ASSERT_EQ(test::e2e::ensure_tracefs(), "") << "set-up failed";
  auto fmt_fields = tracepoint_format("sched/sched_switch");
  for (const char* name : {"prev_comm", "prev_pid", "prev_prio", "next_comm", "next_pid", "next_prio"}) {
    ASSERT_TRUE(fmt_fields.count(name)) << "set-up failed: no tracefs format for sched_switch field " << name;
  }
  size_t fields_end = 0;
  for (const auto& [name, fld] : fmt_fields) fields_end = std::max(fields_end, fld.offset + fld.size);

  std::vector<std::string> ours;
  for (size_t i = 0; i < d.kept.size(); ++i) {
    const Sample& s = d.kept[i].first;
    const std::vector<uint8_t>& raw = d.kept_raw[i];
    // The u32 size and the data are padded together to a multiple of 8.
    EXPECT_EQ((4 + raw.size()) % 8, 0u) << "raw size " << raw.size();
    ASSERT_GE(raw.size(), fields_end);
    auto str = [&](const char* n) {
      const TraceField& f = fmt_fields[n];
      std::string v(reinterpret_cast<const char*>(raw.data() + f.offset), f.size);
      return v.substr(0, v.find('\0'));
    };
    auto i32 = [&](const char* n) {
      int32_t v;
      std::memcpy(&v, raw.data() + fmt_fields[n].offset, 4);
      return v;
    };
    ours.push_back(fmt::format("{}/{} [{}] {} {} {} {} ==> {} {} {}", static_cast<int32_t>(s.pid),
                               static_cast<int32_t>(s.tid), static_cast<int32_t>(s.cpu), s.time, str("prev_comm"),
                               i32("prev_pid"), i32("prev_prio"), str("next_comm"), i32("next_pid"), i32("next_prio")));
  }
  CommandResult script = run("timeout 60 perf script -i " + shell_quote(rec.path) + " --ns -F pid,tid,cpu,time,trace");
  ASSERT_EQ(script.status, 0) << script.err;
  std::vector<std::string> perf;
  std::istringstream in(script.out);
  std::string line;
  while (std::getline(in, line)) {
    test::e2e::ScriptSchedSwitch s;
    if (test::e2e::parse_script_sched_switch(line, &s)) {
      perf.push_back(fmt::format("{}/{} [{}] {} {} {} {} ==> {} {} {}", s.pid, s.tid, s.cpu, s.time, s.prev_comm,
                                 s.prev_pid, s.prev_prio, s.next_comm, s.next_pid, s.next_prio));
    }
  }
  EXPECT_EQ("", multiset_diff(ours, perf)) << "sched_switch fields vs perf script -F trace";
}

// 8. `perf record --threads`: a directory with the header file and data.N per reader thread.
TEST(PerfRecordings, ThreadsDirectory) {
  REQUIRE_RECORDING(rec, "threads.data", "perf record -q --threads -e cpu-clock -F 2000 -g -o {out} -- {w} 0.2");
  ASSERT_TRUE(fs::is_directory(rec.path)) << "perf 6.1 should write a directory for --threads";
  Decoded d = check_recording(rec.path, Layout::kDirectory);
  size_t from_data_n = 0;
  for (const std::string& k : d.records) from_data_n += k.rfind("data.", 0) == 0;
  EXPECT_GT(from_data_n, 0u);
}

}  // namespace
}  // namespace tperf::perfdata
