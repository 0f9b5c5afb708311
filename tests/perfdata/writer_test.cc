// The Writer against two oracles: perf 6.1 (perf script / perf report -D must read the files
// without a warning and show what was written) and tperf's Reader (every record back byte for
// byte, attrs, ids and features equal), in file and pipe mode, both byte orders, compressed.
#include "perfdata/writer.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>

#include "perfdata/byte_writer.h"
#include "perfdata/error.h"
#include "perfdata/reader.h"
#include "perfdata/record_builder.h"
#include "test_util.h"

namespace tperf::perfdata {
namespace {

using test::run_command;
using test::shell_quote;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "tperf-writer-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

bool have_perf() { return test::have_program("perf"); }

constexpr uint64_t kT0 = 1'000'000'000;  // 1 s: perf prints times as seconds
constexpr int kPid = 100;
constexpr int kChild = 101;

// What the standard synthetic profile holds, to compare against what readers show.
struct Profile {
  PerfEventAttr clock;
  PerfEventAttr dummy;
  std::vector<std::vector<uint8_t>> records;  // everything written, in order
  std::vector<Sample> samples;
};

PerfEventAttr user_attr(uint64_t config, uint64_t sample_type) {
  PerfEventAttr a;
  a.type = kTypeSoftware;
  a.size = kAttrSizeVer7;
  a.config = config;
  a.sample_type = sample_type;
  a.read_format = kReadId | kReadLost;
  // exclude_kernel: perf would otherwise warn that no kernel map is known.
  for (auto bit :
       {kFlagDisabled, kFlagInherit, kFlagExcludeKernel, kFlagExcludeHv, kFlagSampleIdAll, kFlagExcludeGuest}) {
    a.set_flag(bit);
  }
  return a;
}

// Two events as `perf record -e cpu-clock:u -g` writes them: a sampling event with callchains
// and a dummy tracking event for the side-band records; both have IDENTIFIER since their
// sample_types differ.
// What a profile holds beyond the usual: kernel frames (arm64 addresses, as Android's simpleperf
// records them) at the head of each callchain, and simpleperf's own records where simpleperf
// writes them (the kernel's symbols before the samples, each DSO and its symbols after them).
struct ProfileExtras {
  bool kernel_frames = false;
  bool simpleperf_records = false;
};

// A simpleperf record: its type, and a body of `fields` then `text` NUL-padded to 8 bytes.
std::vector<uint8_t> simpleperf_record(RecordBuilder& b, uint32_t type, std::vector<uint64_t> fields,
                                       const std::string& text) {
  std::vector<uint8_t> body;
  for (uint64_t f : fields) {
    for (int i = 0; i < 8; ++i) body.push_back(static_cast<uint8_t>(f >> (8 * i)));
  }
  body.insert(body.end(), text.begin(), text.end());
  do body.push_back(0);
  while (body.size() % 8);
  return b.record(type, 0, body);
}

Profile write_profile(Writer& w, int nsamples = 12, ProfileExtras extras = {}) {
  Profile p;
  p.clock = user_attr(kSwCpuClock, kSampleIdentifier | kSampleIp | kSampleTid | kSampleTime | kSampleCpu |
                                       kSamplePeriod | kSampleCallchain);
  p.clock.sample_period = 4000;
  p.clock.set_flag(kFlagFreq);
  p.dummy = user_attr(kSwDummy, kSampleIdentifier | kSampleIp | kSampleTid | kSampleTime | kSampleCpu);
  p.dummy.sample_period = 1;
  for (auto bit : {kFlagMmap, kFlagComm, kFlagTask, kFlagMmap2, kFlagCommExec}) p.dummy.set_flag(bit);
  w.add_attr(p.clock, {10, 11}, "cpu-clock:u");
  w.add_attr(p.dummy, {20, 21}, "dummy:u");

  w.set_hostname("testhost");
  w.set_osrelease("6.1.0-test");
  w.set_version("6.1.0");
  w.set_arch("x86_64");
  w.set_nrcpus(4, 2);
  w.set_cpudesc("Test CPU @ 1.00GHz");
  w.set_cpuid("GenuineIntel,6,85,7");
  w.set_total_mem(16384);
  std::vector<std::string> argv{"/usr/bin/perf", "record", "-g", "./myprog"};
  w.set_cmdline(argv);
  w.set_sample_time(kT0 + 1'000'000, kT0 + nsamples * 1'000'000);
  w.set_clockid(1);

  RecordBuilder rc = w.builder(0);
  RecordBuilder rd = w.builder(1);
  auto put = [&](std::vector<uint8_t> rec) {
    w.write_record(rec);
    p.records.push_back(std::move(rec));
  };
  put(rd.comm({.pid = kPid, .tid = kPid, .comm = "perf-exec"}));
  put(rd.finished_init());
  put(rd.comm({.pid = kPid, .tid = kPid, .comm = "myprog", .exec = true},
              {.pid = kPid, .tid = kPid, .time = kT0 + 100, .id = 20}));
  put(rd.mmap2({.pid = kPid,
                .tid = kPid,
                .addr = 0x400000,
                .len = 0x2000,
                .maj = 8,
                .min = 1,
                .ino = 1234,
                .filename = "/usr/bin/myprog"},
               {.pid = kPid, .tid = kPid, .time = kT0 + 200, .id = 20}));
  if (extras.simpleperf_records) {
    // SIMPLE_PERF_RECORD_KERNEL_SYMBOL: the size of a kallsyms text, then the text.
    const std::string kallsyms = "ffffffc008010000 T _text\nffffffc0080a1000 T el0_svc\n";
    w.write_record(simpleperf_record(rd, 32769, {kallsyms.size()}, kallsyms));
  }
  put(rd.fork({.pid = kPid, .ppid = kPid, .tid = kChild, .ptid = kPid, .time = kT0 + 500'000},
              {.pid = kPid, .tid = kChild, .time = kT0 + 500'000, .id = 21, .cpu = 1}));
  for (int i = 0; i < nsamples; ++i) {
    Sample s;
    s.identifier = (i & 1) ? 11 : 10;
    s.ip = 0x400100 + 0x10 * i;
    s.pid = kPid;
    s.tid = (i & 1) ? kChild : kPid;
    s.time = kT0 + (i + 1) * 1'000'000;
    s.cpu = i & 1;
    s.period = 250000 + i;
    s.callchain = {kContextUser, s.ip, 0x400800 + 8 * static_cast<uint64_t>(i), 0x400900};
    if (extras.kernel_frames) {
      const uint64_t k = 0xffffffc0080a1000 + 0x40 * static_cast<uint64_t>(i % 3);
      s.callchain.insert(s.callchain.begin(), {kContextKernel, k, 0xffffffc008012340});
    }
    put(rc.sample(s));
    p.samples.push_back(s);
    if (i % 5 == 4) put(rc.finished_round());
  }
  put(rd.exit({.pid = kPid, .ppid = kPid, .tid = kChild, .ptid = kPid, .time = kT0 + 900'000'000},
              {.pid = kPid, .tid = kChild, .time = kT0 + 900'000'000, .id = 21, .cpu = 1}));
  put(rd.finished_round());
  if (extras.simpleperf_records) {
    // SIMPLE_PERF_RECORD_DSO (type, id, min_vaddr, name) and SIMPLE_PERF_RECORD_SYMBOL (addr,
    // len, dso id, name), as simpleperf appends them after recording.
    w.write_record(simpleperf_record(rd, 32770, {1, 0, 0x400000}, "/usr/bin/myprog"));
    w.write_record(simpleperf_record(rd, 32771, {0x400100, 0x200, 0}, "main"));
  }
  return p;
}

// Runs a perf command on `file` (pipe files are fed on standard input) and returns its
// standard output and error together.
std::string run_perf(const std::string& args, const std::string& file, bool pipe) {
  std::string in = pipe ? "-i - < " + shell_quote(file) : "-i " + shell_quote(file);
  return run_command("perf " + args + " " + in + " 2>&1");
}

std::vector<std::string> problem_lines(const std::string& out) {
  std::vector<std::string> bad;
  std::istringstream is(out);
  std::string line;
  static const std::regex kProblem("warning|error|failed|unexpected|unhandled|invalid|incompatible", std::regex::icase);
  while (std::getline(is, line)) {
    // FINISHED_INIT is unknown to perf 6.1's dump ("unhandled!") yet perf writes it itself.
    if (line.find("PERF_RECORD_FINISHED_INIT") != std::string::npos) continue;
    if (std::regex_search(line, kProblem)) bad.push_back(line);
  }
  return bad;
}

std::string join(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

struct ScriptSample {
  std::string comm;
  uint32_t pid, tid, cpu;
  uint64_t time;
};

// perf script --ns -F comm,pid,tid,cpu,time,event: "  myprog   100/101   [001]     1.002000000: cpu-clock:u:"
std::vector<ScriptSample> parse_script(const std::string& out) {
  static const std::regex kLine(R"(^\s*(\S+)\s+(\d+)/(\d+)\s+\[(\d+)\]\s+(\d+)\.(\d{9}):\s+cpu-clock:u:)");
  std::vector<ScriptSample> v;
  std::istringstream is(out);
  std::string line;
  while (std::getline(is, line)) {
    std::smatch m;
    if (!std::regex_search(line, m, kLine)) continue;
    v.push_back({m[1], static_cast<uint32_t>(std::stoul(m[2])), static_cast<uint32_t>(std::stoul(m[3])),
                 static_cast<uint32_t>(std::stoul(m[4])), std::stoull(m[5]) * 1'000'000'000 + std::stoull(m[6])});
  }
  return v;
}

struct DumpSample {
  uint64_t time, ip;
  uint32_t pid, tid;
  std::vector<uint64_t> chain;
};

// perf report -D: "1 1002000000 0x2e0 [0x60]: PERF_RECORD_SAMPLE(IP, 0x2): 100/101: 0x400110 period: ..."
// followed by "... FP chain: nr:4" and ".....  0: fffffffffffffe00".
std::vector<DumpSample> parse_dump(const std::string& out) {
  static const std::regex kSample(
      R"(^\d+ (\d+) 0x[0-9a-f]+ \[0x[0-9a-f]+\]: PERF_RECORD_SAMPLE\([^)]*\): (\d+)/(\d+): 0x([0-9a-f]+))");
  static const std::regex kChain(R"(^\.\.\.\.\.\s+\d+: ([0-9a-f]+))");
  std::vector<DumpSample> v;
  std::istringstream is(out);
  std::string line;
  while (std::getline(is, line)) {
    std::smatch m;
    if (std::regex_search(line, m, kSample)) {
      v.push_back({std::stoull(m[1]),
                   std::stoull(m[4], nullptr, 16),
                   static_cast<uint32_t>(std::stoul(m[2])),
                   static_cast<uint32_t>(std::stoul(m[3])),
                   {}});
    } else if (!v.empty() && std::regex_search(line, m, kChain)) {
      v.back().chain.push_back(std::stoull(m[1], nullptr, 16));
    }
  }
  return v;
}

// perf must read the file without complaint and show every sample with the comm, pid, tid, cpu,
// time and callchain written.
void expect_perf_reads(const std::string& file, const Profile& p, bool pipe, bool swap) {
  std::string script =
      run_perf("script --ns -F comm,pid,tid,cpu,time,event --show-task-events --show-mmap-events", file, pipe);
  EXPECT_EQ(problem_lines(script), std::vector<std::string>{}) << script;
  auto got = parse_script(script);
  ASSERT_EQ(got.size(), p.samples.size()) << script;
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(got[i].comm, "myprog");
    EXPECT_EQ(got[i].pid, p.samples[i].pid);
    EXPECT_EQ(got[i].tid, p.samples[i].tid);
    EXPECT_EQ(got[i].cpu, p.samples[i].cpu);
    EXPECT_EQ(got[i].time, p.samples[i].time);
  }
  // Side-band records as perf decodes them.
  EXPECT_NE(script.find("PERF_RECORD_COMM exec: myprog:100/100"), std::string::npos) << script;
  // perf 6.1 does not swap MMAP2 prot/flags of foreign-endian files: it shows "---p" for them.
  EXPECT_NE(script.find(std::string("PERF_RECORD_MMAP2 100/100: [0x400000(0x2000) @ 0 08:01 1234 0]: ") +
                        (swap ? "---p" : "r-xp") + " /usr/bin/myprog"),
            std::string::npos)
      << script;
  EXPECT_NE(script.find("PERF_RECORD_FORK(100:101):(100:100)"), std::string::npos) << script;
  EXPECT_NE(script.find("PERF_RECORD_EXIT(100:101):(100:100)"), std::string::npos) << script;

  std::string dump = run_perf("report -D", file, pipe);
  EXPECT_EQ(problem_lines(dump), std::vector<std::string>{}) << join(problem_lines(dump));
  auto dumped = parse_dump(dump);
  ASSERT_EQ(dumped.size(), p.samples.size());
  for (size_t i = 0; i < dumped.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(dumped[i].time, p.samples[i].time);
    EXPECT_EQ(dumped[i].ip, p.samples[i].ip);
    EXPECT_EQ(dumped[i].pid, p.samples[i].pid);
    EXPECT_EQ(dumped[i].tid, p.samples[i].tid);
    EXPECT_EQ(dumped[i].chain, p.samples[i].callchain);
  }
  std::smatch m;
  ASSERT_TRUE(std::regex_search(dump, m, std::regex(R"(\n\s*SAMPLE events:\s+(\d+))")));
  EXPECT_EQ(std::stoul(m[1]), p.samples.size());
}

// The same through tperf's Reader: records byte for byte, attrs, ids, names, features.
void expect_reader_reads(const std::string& file, const Profile& p, bool swap, bool compressed) {
  auto r = Reader::open(file);
  EXPECT_EQ(r->swapped(), swap);
  Record rec;
  std::vector<std::vector<uint8_t>> got;
  std::vector<Sample> samples;
  size_t from_compressed = 0;
  while (r->next(rec)) {
    // Pipe-mode header records are the writer's, not the profile's.
    if (rec.type == kRecordHeaderAttr || rec.type == kRecordHeaderFeature || rec.type == kRecordEventUpdate) continue;
    // The Reader shows COMPRESSED records as well as the records they hold.
    if (rec.type == kRecordCompressed || rec.type == kRecordCompressed2) continue;
    got.emplace_back(rec.bytes.begin(), rec.bytes.end());
    if (rec.from_compressed) ++from_compressed;
    if (rec.type == kRecordSample) {
      EXPECT_EQ(r->attr_index_of(rec), 0);
      samples.emplace_back();
      r->decode_sample(rec, samples.back());
    }
  }
  EXPECT_EQ(got, p.records);
  EXPECT_EQ(r->warnings(), std::vector<std::string>{});
  // Pipe mode: known once the HEADER_ATTR records have been read.
  ASSERT_EQ(r->attrs().size(), 2u);
  const PerfEventAttr* want[] = {&p.clock, &p.dummy};
  const std::vector<uint64_t> want_ids[] = {{10, 11}, {20, 21}};
  const char* want_names[] = {"cpu-clock:u", "dummy:u"};
  for (size_t i = 0; i < 2; ++i) {
    SCOPED_TRACE(i);
    std::vector<uint8_t> a, b;
    encode_attr(r->attrs()[i].attr, a);
    encode_attr(*want[i], b);
    EXPECT_EQ(a, b);
    EXPECT_EQ(r->attrs()[i].ids, want_ids[i]);
    EXPECT_EQ(r->attrs()[i].name, want_names[i]);
  }
  if (compressed) {
    EXPECT_GT(from_compressed, 0u);
    EXPECT_GT(r->stats().count(kRecordCompressed) + r->stats().count(kRecordCompressed2), 0u);
  }
  ASSERT_EQ(samples.size(), p.samples.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(samples[i].identifier, p.samples[i].identifier);
    EXPECT_EQ(samples[i].ip, p.samples[i].ip);
    EXPECT_EQ(samples[i].pid, p.samples[i].pid);
    EXPECT_EQ(samples[i].tid, p.samples[i].tid);
    EXPECT_EQ(samples[i].time, p.samples[i].time);
    EXPECT_EQ(samples[i].cpu, p.samples[i].cpu);
    EXPECT_EQ(samples[i].period, p.samples[i].period);
    EXPECT_EQ(samples[i].callchain, p.samples[i].callchain);
  }
  const Features& f = r->features();
  EXPECT_EQ(f.hostname, "testhost");
  EXPECT_EQ(f.osrelease, "6.1.0-test");
  EXPECT_EQ(f.version, "6.1.0");
  EXPECT_EQ(f.arch, "x86_64");
  EXPECT_EQ(f.nr_cpus_available, 4u);
  EXPECT_EQ(f.nr_cpus_online, 2u);
  EXPECT_EQ(f.cpudesc, "Test CPU @ 1.00GHz");
  EXPECT_EQ(f.cpuid, "GenuineIntel,6,85,7");
  EXPECT_EQ(f.total_mem_kb, 16384u);
  EXPECT_EQ(f.cmdline, (std::vector<std::string>{"/usr/bin/perf", "record", "-g", "./myprog"}));
  EXPECT_EQ(f.first_sample_time, kT0 + 1'000'000);
  EXPECT_EQ(f.last_sample_time, kT0 + p.samples.size() * 1'000'000);
  EXPECT_EQ(f.clockid_res_ns, 1u);
  ASSERT_EQ(f.event_desc.size(), 2u);
  EXPECT_EQ(f.event_desc[0].name, "cpu-clock:u");
  EXPECT_EQ(f.event_desc[1].ids, (std::vector<uint64_t>{20, 21}));
  EXPECT_EQ(f.event_desc[1].attr.flags, p.dummy.flags);
  EXPECT_EQ(f.has(kFeatCompressed), compressed);
  if (compressed) {
    EXPECT_EQ(f.compressed.type, 1u);
    EXPECT_EQ(f.compressed.level, 3u);
  }
  EXPECT_EQ(f.warnings, std::vector<std::string>{});
}

struct Variant {
  const char* name;
  Writer::Options options;
};

class WriterVariantTest : public ::testing::TestWithParam<Variant> {};

TEST_P(WriterVariantTest, PerfAndReaderReadTheProfile) {
  const Writer::Options& o = GetParam().options;
  TempDir dir;
  std::string file = dir.file("perf.data");
  Writer w(o);
  w.open(file);
  Profile p = write_profile(w);
  w.finish();

  expect_reader_reads(file, p, o.swap, o.compression_level > 0);
  if (!have_perf()) GTEST_SKIP() << "perf not in PATH";
  // perf 6.1 does not swap HEADER_FEATURE ids of foreign-endian pipes ("wrong feature ID"), and
  // does not know COMPRESSED2.
  if ((o.pipe && o.swap) || o.compressed2) return;
  expect_perf_reads(file, p, o.pipe, o.swap);
}

const Variant kVariants[] = {
    {"file", {}},
    {"pipe", {.pipe = true}},
    {"file_swapped", {.swap = true}},
    {"pipe_swapped", {.pipe = true, .swap = true}},
    {"file_zstd", {.compression_level = 3}},
    {"file_zstd_swapped", {.swap = true, .compression_level = 3}},
    // A tiny chunk: one zstd flush per record.
    {"file_zstd_small_chunks", {.compression_level = 3, .compress_chunk = 64}},
    {"pipe_zstd", {.pipe = true, .compression_level = 3}},
    {"file_zstd2", {.compression_level = 3, .compressed2 = true}},
    {"pipe_zstd2_swapped", {.pipe = true, .swap = true, .compression_level = 3, .compressed2 = true}},
    {"file_attrs_after_data", {.attrs_after_data = true}},
    {"file_attrs_after_data_swapped", {.swap = true, .attrs_after_data = true}},
};

INSTANTIATE_TEST_SUITE_P(Layouts, WriterVariantTest, ::testing::ValuesIn(kVariants),
                         [](const auto& info) { return std::string(info.param.name); });

// Android's simpleperf writes perf.data with records of its own (types 32768 and up) and, on
// arm64, kernel frames in the callchains. perf 6.1 stops at the first such record ("failed to
// process type"): report prints nothing, script only the samples before it. tperf skips them:
// its script and report of such a file equal perf's of the same file without them, the kernel
// frames included (unresolved here: an empty kallsyms for both, so the kernel does not matter).
TEST(WriterTest, SimpleperfRecordsAreSkippedAsIfAbsent) {
  TempDir dir;
  const std::string plain = dir.file("plain.data"), simpleperf = dir.file("simpleperf.data");
  const std::string kallsyms = dir.file("empty.kallsyms");
  std::ofstream(kallsyms).close();
  for (bool with_records : {false, true}) {
    Writer w;
    w.open(with_records ? simpleperf : plain);
    write_profile(w, 12, {.kernel_frames = true, .simpleperf_records = with_records});
    w.finish();
  }
  ASSERT_TRUE(have_perf()) << "perf is the oracle here";
  const std::string sp = shell_quote(simpleperf), pl = shell_quote(plain), ks = shell_quote(kallsyms);
  // perf fails on the simpleperf file.
  EXPECT_NE(run_command("perf report --stdio -i " + sp + " 2>&1").find("failed to process type: 32769"),
            std::string::npos);
  for (const std::string args : {"script", "script -F comm,tid,time,ip,sym,dso", "report --stdio",
                                 "report --stdio --no-children", "report --stdio -g caller -s dso,sym"}) {
    SCOPED_TRACE(args);
    const std::string want =
        run_command("perf " + args + " --kallsyms " + ks + " -i " + pl + " 2>/dev/null | grep -v '^# (Tip' | grep -v '^#$'");
    int status = -1;
    const std::string got = run_command(std::string(TPERF_BINARY) + " " + args + " --kallsyms " + ks + " -i " + sp +
                                            (args.starts_with("report") ? " --no-unwind-summary" : "") +
                                            " 2>/dev/null | grep -v '^#$'",
                                        &status);
    EXPECT_EQ(status, 0);
    EXPECT_NE(want.find("ffffffc0080a1"), std::string::npos) << "no kernel frame in perf's output:\n" << want;
    EXPECT_EQ(got, want);
  }
}

// perf 6.1 writes header, id arrays, attrs, data, then the feature table at data end.
TEST(WriterTest, FileLayoutIsPerf61s) {
  TempDir dir;
  std::string file = dir.file("perf.data");
  Writer w;
  w.open(file);
  write_profile(w);
  w.finish();
  auto r = Reader::open(file);
  const FileHeader& h = r->header();
  EXPECT_EQ(h.size, kFileHeaderSize);
  EXPECT_EQ(h.attr_size, 128u + 16);
  // ids of both attrs (4 u64) right after the header, attrs after them, then the data.
  EXPECT_EQ(h.attrs.offset, kFileHeaderSize + 4 * 8);
  EXPECT_EQ(h.attrs.size, 2 * (128u + 16));
  EXPECT_EQ(h.data.offset, h.attrs.offset + h.attrs.size);
  EXPECT_EQ(h.data.size, w.data_size());
  EXPECT_TRUE(h.features.test(kFeatHostname));
  EXPECT_TRUE(h.features.test(kFeatEventDesc));
  EXPECT_FALSE(h.features.test(kFeatBuildId));
  EXPECT_EQ(std::filesystem::file_size(file), w.position());

  if (!have_perf()) GTEST_SKIP() << "perf not in PATH";
  std::string hdr = run_command("perf report --header-only -i " + shell_quote(file) + " 2>&1");
  EXPECT_NE(hdr.find("# data offset    : " + std::to_string(h.data.offset)), std::string::npos) << hdr;
  EXPECT_NE(hdr.find("# data size      : " + std::to_string(h.data.size)), std::string::npos) << hdr;
  EXPECT_NE(hdr.find("# hostname : testhost"), std::string::npos) << hdr;
  EXPECT_NE(hdr.find("# nrcpus online : 2"), std::string::npos) << hdr;
  EXPECT_NE(hdr.find("# nrcpus avail : 4"), std::string::npos) << hdr;
  EXPECT_NE(hdr.find("# total memory : 16384 kB"), std::string::npos) << hdr;
  EXPECT_NE(hdr.find("# cmdline : /usr/bin/perf record -g ./myprog"), std::string::npos) << hdr;
  EXPECT_NE(hdr.find("# event : name = cpu-clock:u, , id = { 10, 11 }"), std::string::npos) << hdr;
  EXPECT_NE(hdr.find("# event : name = dummy:u, , id = { 20, 21 }"), std::string::npos) << hdr;
  EXPECT_EQ(problem_lines(hdr), std::vector<std::string>{}) << hdr;
}

TEST(WriterTest, CompressedFeatureAsPerfShowsIt) {
  if (!have_perf()) GTEST_SKIP() << "perf not in PATH";
  TempDir dir;
  std::string file = dir.file("perf.data");
  Writer w(Writer::Options{.compression_level = 3});
  w.open(file);
  write_profile(w);
  w.finish();
  EXPECT_GT(w.bytes_before_compression(), 0u);
  std::string hdr = run_command("perf report --header-only -i " + shell_quote(file) + " 2>&1");
  EXPECT_NE(hdr.find("# compressed : Zstd, level = 3"), std::string::npos) << hdr;
  std::string dump = run_command("perf report -D -i " + shell_quote(file) + " 2>&1");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(dump, m, std::regex(R"(\n\s*COMPRESSED events:\s+(\d+))"))) << dump;
  EXPECT_GT(std::stoul(m[1]), 0u);
}

// A chunk of incompressible data becomes several COMPRESSED records (each at most 64 KiB),
// and records straddle them; perf and the Reader still get every sample back.
TEST(WriterTest, LargeIncompressibleChunksSplitAcrossRecords) {
  TempDir dir;
  std::string file = dir.file("perf.data");
  Writer w(Writer::Options{.compression_level = 1});
  w.open(file);
  PerfEventAttr a = user_attr(kSwCpuClock, kSampleIp | kSampleTid | kSampleTime | kSamplePeriod | kSampleRaw);
  w.add_attr(a, {7}, "cpu-clock:u");
  w.set_hostname("h");
  RecordBuilder rb = w.builder(0);
  std::mt19937_64 rng(42);
  std::vector<std::vector<uint8_t>> written;
  std::vector<uint8_t> raw(4000);
  constexpr int kSamples = 400;  // ~1.6 MB of random bytes: several 256 KiB chunks
  for (int i = 0; i < kSamples; ++i) {
    for (auto& b : raw) b = static_cast<uint8_t>(rng());
    Sample s;
    s.ip = 0x1000 + i;
    s.pid = s.tid = 5;
    s.time = kT0 + i;
    s.period = 1;
    s.raw = std::span<const uint8_t>(raw.data(), raw.size() - 4);  // 4 + size stays 8-aligned
    written.push_back(rb.sample(s));
    w.write_record(written.back());
  }
  w.finish();
  EXPECT_GT(w.bytes_after_compression(), 4 * (kMaxRecordSize - 8));

  auto r = Reader::open(file);
  Record rec;
  std::vector<std::vector<uint8_t>> got;
  while (r->next(rec)) {
    if (rec.type != kRecordCompressed) got.emplace_back(rec.bytes.begin(), rec.bytes.end());
  }
  EXPECT_EQ(got, written);
  EXPECT_GT(r->stats().count(kRecordCompressed), 4 * 6u);

  if (!have_perf()) GTEST_SKIP() << "perf not in PATH";
  std::string dump = run_command("perf report -D -i " + shell_quote(file) + " 2>&1");
  EXPECT_EQ(problem_lines(dump), std::vector<std::string>{}) << join(problem_lines(dump));
  std::smatch m;
  ASSERT_TRUE(std::regex_search(dump, m, std::regex(R"(\n\s*SAMPLE events:\s+(\d+))")));
  EXPECT_EQ(std::stoi(m[1]), kSamples);
}

// Pipe mode to a descriptor, as `perf record -o -` does to standard output.
TEST(WriterTest, PipeToDescriptorIsReadFromStdin) {
  TempDir dir;
  std::string file = dir.file("pipe.data");
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  Writer w(Writer::Options{.pipe = true});
  w.open_fd(fd, "<pipe>");
  Profile p = write_profile(w);
  w.finish();
  ::close(fd);  // not owned by the writer

  std::ifstream in(file, std::ios::binary);
  std::vector<char> head(16);
  in.read(head.data(), 16);
  EXPECT_EQ(std::string(head.data(), 8), "PERFILE2");
  EXPECT_EQ(head[8], 16);

  auto r = Reader::open(file);
  EXPECT_TRUE(r->is_pipe());
  // perf 6.1's order: attrs, features ending with id 32, event names, then the data.
  Record rec;
  std::vector<uint32_t> types;
  std::vector<uint64_t> feats;
  while (r->next(rec) && types.size() < 40) {
    types.push_back(rec.type);
    if (rec.type == kRecordHeaderFeature) feats.push_back(load<uint64_t>(rec.bytes.data() + 8, false));
  }
  ASSERT_GE(types.size(), 3u);
  EXPECT_EQ(types[0], kRecordHeaderAttr);
  EXPECT_EQ(types[1], kRecordHeaderAttr);
  EXPECT_EQ(feats.back(), kFeatLastPerf61);
  EXPECT_TRUE(std::is_sorted(feats.begin(), feats.end()));
  expect_reader_reads(file, p, false, false);

  if (!have_perf()) GTEST_SKIP() << "perf not in PATH";
  expect_perf_reads(file, p, true, false);
}

// Attrs added after the first record: pipe mode announces them with HEADER_ATTR on the spot,
// file mode places them after the data.
TEST(WriterTest, LateAttrs) {
  for (bool pipe : {false, true}) {
    SCOPED_TRACE(pipe);
    TempDir dir;
    std::string file = dir.file("perf.data");
    Writer w(Writer::Options{.pipe = pipe});
    w.open(file);
    PerfEventAttr a = user_attr(kSwCpuClock, kSampleIp | kSampleTid | kSampleTime | kSampleIdentifier);
    w.add_attr(a, {1}, "first");
    w.write_record(w.builder(0).sample(Sample{.identifier = 1, .ip = 0x10, .pid = 1, .tid = 1, .time = 5}));
    PerfEventAttr b = a;
    b.config = kSwTaskClock;
    w.add_attr(b, {2}, "second");
    w.write_record(w.builder(1).sample(Sample{.identifier = 2, .ip = 0x20, .pid = 1, .tid = 1, .time = 6}));
    w.finish();

    auto r = Reader::open(file);
    Record rec;
    std::vector<uint64_t> ips;
    while (r->next(rec)) {
      if (rec.type != kRecordSample) continue;
      Sample s;
      r->decode_sample(rec, s);
      EXPECT_EQ(r->attr_index_of(rec), static_cast<int>(s.identifier - 1));
      ips.push_back(s.ip);
    }
    EXPECT_EQ(ips, (std::vector<uint64_t>{0x10, 0x20}));
    ASSERT_EQ(r->attrs().size(), 2u);
    EXPECT_EQ(r->attrs()[1].attr.config, kSwTaskClock);
    EXPECT_EQ(r->attrs()[1].name, "second");
    if (!pipe) {
      EXPECT_GT(r->header().attrs.offset, r->header().data.offset);
    }
  }
}

// The file reaches the disk while records are written, not at finish().
TEST(WriterTest, StreamsToDisk) {
  TempDir dir;
  std::string file = dir.file("perf.data");
  Writer w;
  w.open(file);
  PerfEventAttr a = user_attr(kSwCpuClock, kSampleIp | kSampleTid | kSampleTime);
  w.add_attr(a, {1}, "cpu-clock:u");
  RecordBuilder rb = w.builder(0);
  auto rec = rb.sample(Sample{.ip = 1, .pid = 2, .tid = 2, .time = 3});
  for (int i = 0; i < 200000; ++i) w.write_record(rec);  // 6.4 MB
  EXPECT_GE(std::filesystem::file_size(file), 5u << 20);
  w.finish();
  EXPECT_EQ(w.data_size(), 200000 * rec.size());
}

TEST(WriterTest, OpenFailureNamesPathAndErrno) {
  Writer w;
  try {
    w.open("/nonexistent-dir/perf.data");
    FAIL() << "no exception";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/perf.data"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos) << e.what();
  }
}

TEST(WriterTest, WriteFailureNamesPathAndErrno) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  for (bool pipe : {false, true}) {
    Writer w(Writer::Options{.pipe = pipe});
    w.open("/dev/full");
    PerfEventAttr a = user_attr(kSwCpuClock, kSampleIp);
    w.add_attr(a, {1}, "x");
    try {
      auto rec = w.builder(0).sample(Sample{.ip = 1});
      for (int i = 0; i < 100000; ++i) w.write_record(rec);
      w.finish();
      FAIL() << "no exception";
    } catch (const IoError& e) {
      EXPECT_NE(std::string(e.what()).find("/dev/full"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("No space left on device"), std::string::npos) << e.what();
    }
  }
}

TEST(WriterTest, FileModeNeedsSeekableOutput) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  Writer w;
  EXPECT_THROW(w.open_fd(fds[1], "<pipe>"), IoError);
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST(WriterTest, RejectsMisuse) {
  TempDir dir;
  Writer w(Writer::Options{.pipe = true});
  w.open(dir.file("p.data"));
  PerfEventAttr a = user_attr(kSwCpuClock, kSampleIp);
  w.add_attr(a, {1}, "x");
  auto rec = w.builder(0).sample(Sample{.ip = 1});
  // A header size that disagrees with the bytes given.
  std::vector<uint8_t> longer = rec;
  longer.resize(rec.size() + 8);
  EXPECT_THROW(w.write_record(longer), std::invalid_argument);
  EXPECT_THROW(w.write_record(std::span<const uint8_t>(rec.data(), 4)), std::invalid_argument);
  w.write_record(rec);
  // Pipe mode sent its features with the first record.
  EXPECT_THROW(w.set_hostname("late"), std::logic_error);
  w.finish();
  EXPECT_THROW(w.write_record(rec), std::logic_error);
}

// perf detects a foreign-endian feature bitmap by its HOSTNAME bit; the writer always sets it.
TEST(WriterTest, AlwaysWritesHostname) {
  TempDir dir;
  std::string file = dir.file("perf.data");
  Writer w(Writer::Options{.swap = true});
  w.open(file);
  w.add_attr(user_attr(kSwCpuClock, kSampleIp | kSampleTid), {1}, "cpu-clock:u");
  w.finish();
  auto r = Reader::open(file);
  EXPECT_TRUE(r->features().has(kFeatHostname));
  EXPECT_EQ(r->features().hostname, "");
  ASSERT_EQ(r->features().event_desc.size(), 1u);
  EXPECT_EQ(r->features().event_desc[0].name, "cpu-clock:u");
  if (!have_perf()) GTEST_SKIP() << "perf not in PATH";
  std::string hdr = run_command("perf report --header-only -i " + shell_quote(file) + " 2>&1");
  EXPECT_NE(hdr.find("# event : name = cpu-clock:u"), std::string::npos) << hdr;
}

// Feature helpers that the standard profile does not use, read back by perf and the Reader.
TEST(WriterTest, MoreFeatures) {
  TempDir dir;
  std::string file = dir.file("perf.data");
  Writer w;
  w.open(file);
  w.add_attr(user_attr(kSwCpuClock, kSampleIp | kSampleTid | kSampleTime), {1}, "cpu-clock:u");
  w.set_hostname("h");
  std::vector<BuildIdEntry> ids(2);
  ids[0].misc = kMiscUser;
  ids[0].pid = -1;
  ids[0].build_id = std::vector<uint8_t>(20, 0xab);
  ids[0].filename = "/usr/lib/libfoo.so";
  ids[1].misc = kMiscKernel;
  ids[1].pid = -1;
  ids[1].build_id = {0x12, 0x34, 0x56, 0x78};
  ids[1].filename = "[kernel.kallsyms]";
  w.set_build_ids(ids);
  w.set_clock_data({.version = 1, .clockid = 1, .wall_clock_ns = 1700000000123456789ULL, .clockid_ns = 5000});
  w.set_clockid(1);
  w.write_record(w.builder(0).sample(Sample{.ip = 0x10, .pid = 1, .tid = 1, .time = 5000}));
  w.finish();

  auto r = Reader::open(file);
  const Features& f = r->features();
  ASSERT_EQ(f.build_ids.size(), 2u);
  EXPECT_EQ(f.build_ids[0].build_id, ids[0].build_id);
  EXPECT_EQ(f.build_ids[0].filename, "/usr/lib/libfoo.so");
  EXPECT_EQ(f.build_ids[1].build_id, ids[1].build_id);
  EXPECT_EQ(f.build_ids[1].misc & kMiscCpumodeMask, kMiscKernel);
  EXPECT_EQ(f.clock_data.clockid, 1u);
  EXPECT_EQ(f.clock_data.wall_clock_ns, 1700000000123456789ULL);
  EXPECT_EQ(f.clock_data.clockid_ns, 5000u);
  EXPECT_EQ(f.clockid_res_ns, 1u);

  if (!have_perf()) GTEST_SKIP() << "perf not in PATH";
  std::string bids = run_command("perf buildid-list -i " + shell_quote(file) + " 2>&1");
  EXPECT_NE(bids.find("abababababababababababababababababababab /usr/lib/libfoo.so"), std::string::npos) << bids;
  EXPECT_NE(bids.find("12345678                                 [kernel.kallsyms]"), std::string::npos) << bids;
  std::string hdr = run_command("perf report --header-only -I -i " + shell_quote(file) + " 2>&1");
  EXPECT_NE(hdr.find("# clockid: monotonic (1)"), std::string::npos) << hdr;
  EXPECT_NE(hdr.find("# reference time: 2023-11-14 22:13:20.123456 = 1700000000.123456 (TOD) = 0.000005000 "
                     "(monotonic)"),
            std::string::npos)
      << hdr;
  EXPECT_NE(hdr.find("# clockid frequency: 1000 MHz"), std::string::npos) << hdr;
  EXPECT_EQ(problem_lines(hdr), std::vector<std::string>{}) << hdr;
}

// DIR_FORMAT belongs in the header file of a `perf record --threads` directory (perf 6.1 asserts
// on it in a plain file), so only the Reader checks it here.
TEST(WriterTest, DirFormatFeature) {
  TempDir dir;
  std::string file = dir.file("perf.data");
  Writer w;
  w.open(file);
  w.add_attr(user_attr(kSwCpuClock, kSampleIp), {1}, "cpu-clock:u");
  w.set_dir_format(1);
  w.finish();
  auto r = Reader::open(file);
  EXPECT_TRUE(r->features().has(kFeatDirFormat));
  EXPECT_EQ(r->features().dir_format_version, 1u);
}

// The topology encoders, held against perf's own rendering of them (perf report -I) and the Reader.
TEST(WriterTest, TopologyFeatures) {
  TempDir dir;
  std::string file = dir.file("perf.data");
  Writer w;
  w.open(file);
  w.add_attr(user_attr(kSwCpuClock, kSampleIp | kSampleTid | kSampleTime), {1}, "cpu-clock:u");
  w.set_nrcpus(2, 2);
  CpuTopology topo;
  topo.core_siblings = {"0-1"};
  topo.thread_siblings = {"0", "1"};
  topo.cpus = {{.core_id = 0, .socket_id = 0, .die_id = 0}, {.core_id = 1, .socket_id = 0, .die_id = 0}};
  topo.die_siblings = {"0-1"};
  topo.has_die = true;
  w.set_feature(kFeatCpuTopology, feature_cpu_topology(topo));
  std::vector<NumaNode> numa = {{.node = 0, .mem_total = 1000, .mem_free = 500, .cpus = "0-1"}};
  w.set_feature(kFeatNumaTopology, feature_numa_topology(numa));
  std::vector<std::pair<uint32_t, std::string>> pmus = {{1, "software"}, {2, "tracepoint"}};
  w.set_feature(kFeatPmuMappings, feature_pmu_mappings(pmus));
  std::vector<CacheLevel> caches = {
      {.level = 1, .line_size = 64, .sets = 64, .ways = 12, .type = "Data", .size = "48K", .map = "0"},
      {.level = 3, .line_size = 64, .sets = 4096, .ways = 16, .type = "Unified", .size = "32768K", .map = "0-1"}};
  w.set_feature(kFeatCache, feature_cache(caches));
  MemTopology mem;
  mem.version = 1;
  mem.block_size = 0x8000000;
  mem.nodes = {{.node = 0, .size = 70, .nbits = 70, .bitmap = {~0ULL, 0x3f}}};
  w.set_feature(kFeatMemTopology, feature_mem_topology(mem));
  w.write_record(w.builder(0).sample(Sample{.ip = 0x10, .pid = 1, .tid = 1, .time = 5000}));
  w.finish();

  auto r = Reader::open(file);
  const Features& f = r->features();
  EXPECT_EQ(f.cpu_topology.core_siblings, topo.core_siblings);
  EXPECT_EQ(f.cpu_topology.thread_siblings, topo.thread_siblings);
  ASSERT_EQ(f.cpu_topology.cpus.size(), 2u);
  EXPECT_EQ(f.cpu_topology.cpus[1].core_id, 1u);
  EXPECT_TRUE(f.cpu_topology.has_die);
  ASSERT_EQ(f.numa_topology.size(), 1u);
  EXPECT_EQ(f.numa_topology[0].mem_free, 500u);
  EXPECT_EQ(f.pmu_mappings, pmus);
  ASSERT_EQ(f.caches.size(), 2u);
  EXPECT_EQ(f.caches[1].size, "32768K");
  ASSERT_EQ(f.mem_topology.nodes.size(), 1u);
  EXPECT_EQ(f.mem_topology.nodes[0].bitmap, mem.nodes[0].bitmap);
  EXPECT_TRUE(f.warnings.empty());

  if (!have_perf()) GTEST_SKIP() << "perf not in PATH";
  std::string hdr = run_command("perf report --header-only -I -i " + shell_quote(file) + " 2>&1");
  for (const char* want : {"# sibling sockets : 0-1", "# sibling dies    : 0-1", "# sibling threads : 0",
                           "# sibling threads : 1", "# CPU 1: Core ID 1, Die ID 0, Socket ID 0",
                           "# node0 meminfo  : total = 1000 kB, free = 500 kB", "# node0 cpu list : 0-1",
                           "# pmu mappings: software = 1, tracepoint = 2", "#  L1 Data                 48K [0]",
                           "#  L3 Unified           32768K [0-1]", "# memory nodes (nr 1, block size 0x8000000):",
                           "#    0 [8G]: 0-69"}) {
    EXPECT_NE(hdr.find(want), std::string::npos) << want << "\n" << hdr;
  }
  EXPECT_EQ(problem_lines(hdr), std::vector<std::string>{}) << hdr;
}

// update_features: what perf record does after reading its data back (the BUILD_ID feature).
TEST(WriterTest, UpdateFeaturesAddsToAFinishedFile) {
  TempDir dir;
  std::string file = dir.file("perf.data");
  Writer w;
  w.open(file);
  w.add_attr(user_attr(kSwCpuClock, kSampleIp | kSampleTid | kSampleTime), {1}, "cpu-clock:u");
  w.set_hostname("before");
  w.write_record(w.builder(0).sample(Sample{.ip = 0x10, .pid = 1, .tid = 1, .time = 5000}));
  w.finish();
  uint64_t data_size = Reader::open(file)->header().data.size;

  BuildIdEntry e;
  e.misc = kMiscUser;
  e.pid = -1;
  e.build_id = std::vector<uint8_t>(20, 0xcd);
  e.filename = "/bin/app";
  update_features(file, {{kFeatBuildId, feature_build_ids(std::vector<BuildIdEntry>{e})},
                         {kFeatHostname, feature_string("after")}});
  auto r = Reader::open(file);
  EXPECT_EQ(r->header().data.size, data_size);
  EXPECT_EQ(r->features().hostname, "after");
  ASSERT_EQ(r->features().build_ids.size(), 1u);
  EXPECT_EQ(r->features().build_ids[0].filename, "/bin/app");
  EXPECT_TRUE(r->features().has(kFeatEventDesc)) << "features that were there stay";
  Record rec;
  int samples = 0;
  while (r->next(rec)) samples += rec.type == kRecordSample;
  EXPECT_EQ(samples, 1);
  EXPECT_TRUE(r->errors().empty());

  if (!have_perf()) GTEST_SKIP() << "perf not in PATH";
  std::string bids = run_command("perf buildid-list -i " + shell_quote(file) + " 2>&1");
  EXPECT_NE(bids.find("cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd /bin/app"), std::string::npos) << bids;
}

TEST(WriterTest, UpdateFeaturesRefusesWhatItCannotRewrite) {
  TempDir dir;
  std::string file = dir.file("x");
  std::ofstream(file) << "not perf data at all, longer than a header........................................"
                         "...............................................";
  EXPECT_THROW(update_features(file, {}), FormatError);
  EXPECT_THROW(update_features(dir.file("missing"), {}), IoError);
}

// A write failure midway (a file size limit standing for a full disk): salvage keeps every whole
// record that reached the disk and makes the file complete. Runs in a child process, which gets
// the limit.
TEST(WriterTest, SalvageAfterWriteFailureLeavesAReadableFile) {
  TempDir dir;
  std::string file = dir.file("perf.data");
  const PerfEventAttr attr = user_attr(kSwCpuClock, kSampleIp | kSampleTid | kSampleTime);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {300 * 1024, 300 * 1024};
    setrlimit(RLIMIT_FSIZE, &rl);
    Writer w;
    w.open(file);
    w.add_attr(attr, {1}, "cpu-clock:u");
    w.set_hostname("salvaged");
    RecordBuilder rb = w.builder(0);
    try {
      for (uint64_t i = 0; i < 1000000; ++i) {
        w.write_record(rb.sample(Sample{.ip = 0x1000 + i, .pid = 7, .tid = 7, .time = kT0 + i}));
      }
      _exit(3);  // the limit never hit
    } catch (const IoError&) {
    }
    _exit(w.salvage() ? 0 : 4);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  EXPECT_LE(std::filesystem::file_size(file), 300u * 1024);
  auto r = Reader::open(file);
  // The features follow the data only if they still fit under the limit.
  if (r->features().has(kFeatHostname)) {
    EXPECT_EQ(r->features().hostname, "salvaged");
  }
  Record rec;
  Sample s;
  uint64_t n = 0;
  while (r->next(rec)) {
    ASSERT_EQ(rec.type, kRecordSample);
    r->decode_sample(rec, s);
    EXPECT_EQ(s.ip, 0x1000 + n) << "samples in order, none torn";
    ++n;
  }
  EXPECT_GT(n, 1000u);
  EXPECT_TRUE(r->errors().empty());
  EXPECT_TRUE(r->warnings().empty());

  if (!have_perf()) GTEST_SKIP() << "perf not in PATH";
  std::string err = run_command("perf script -i " + shell_quote(file) + " 2>&1 >/dev/null");
  EXPECT_EQ(err, "");
}

// Headerless output: the data.N files of a --threads directory hold records only.
TEST(WriterTest, HeaderlessHoldsRecordsOnly) {
  TempDir dir;
  std::string file = dir.file("data.0");
  Writer::Options o;
  o.headerless = true;
  Writer w(o);
  w.open(file);
  RecordBuilder rb(user_attr(kSwCpuClock, kSampleIp | kSampleTid | kSampleTime));
  auto rec = rb.sample(Sample{.ip = 0x10, .pid = 1, .tid = 1, .time = 5});
  w.write_record(rec);
  w.write_record(rec);
  w.finish();
  EXPECT_EQ(std::filesystem::file_size(file), 2 * rec.size());
}

}  // namespace
}  // namespace tperf::perfdata
