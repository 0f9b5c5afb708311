// The Reader on files built with our Writer: layouts (attrs after the data, larger attrs than
// tperf knows, directories, real pipes), zstd records straddling COMPRESSED chunks, perf's id
// rules for several events, deferred callchains, unknown types, and damage at every byte.
#include "perfdata/reader.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <thread>

#include "perfdata/record_builder.h"
#include "perfdata/records.h"
#include "perfdata/writer.h"
#include "test_util.h"

namespace tperf::perfdata {
namespace {

using test::TempDir;

PerfEventAttr sampling_attr(uint64_t sample_type, uint32_t size = kAttrSizeVer7) {
  PerfEventAttr a;
  a.type = kTypeSoftware;
  a.size = size;
  a.config = kSwCpuClock;
  a.sample_period = 4000;
  a.sample_type = sample_type;
  a.set_flag(kFlagFreq);
  a.set_flag(kFlagSampleIdAll);
  a.set_flag(kFlagExcludeKernel);
  return a;
}

constexpr uint64_t kBasicSample = kSampleIp | kSampleTid | kSampleTime | kSamplePeriod | kSampleCpu;

Sample make_sample(uint32_t tid, uint64_t time, uint64_t ip) {
  Sample s;
  s.ip = ip;
  s.pid = tid;
  s.tid = tid;
  s.time = time;
  s.cpu = tid % 2;
  s.period = 1000 + time % 7;
  return s;
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_file(const std::string& path, std::span<const uint8_t> bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

struct ReadBack {
  std::vector<std::vector<uint8_t>> records;  // bytes of every record, in order
  std::vector<Sample> samples;                // their spans (raw, stack) are not valid any more
  std::vector<std::vector<uint8_t>> raw_data;  // so the RAW data of each sample is kept here
  std::vector<std::string> errors;
};

// `n` samples of thread 2 with `depth`-frame callchains, a FINISHED_ROUND every 1000, zstd at
// `level` (0: none).
void write_chain_samples(const std::string& path, uint64_t n, size_t depth, int level) {
  Writer::Options o;
  o.compression_level = level;
  Writer w(o);
  w.open(path);
  w.add_attr(sampling_attr(kBasicSample | kSampleCallchain), {1}, "cpu-clock");
  RecordBuilder rb = w.builder(0);
  for (uint64_t i = 0; i < n; ++i) {
    Sample s = make_sample(2, 10 + i, 0x400 + i);
    s.callchain.assign(depth, 0x500 + i);
    w.write_record(rb.sample(s));
    if (i % 1000 == 999) w.write_record(rb.finished_round());
  }
  w.finish();
}

ReadBack read_all(Reader& r) {
  ReadBack out;
  Record rec;
  while (r.next(rec)) {
    out.records.emplace_back(rec.bytes.begin(), rec.bytes.end());
    if (rec.type == kRecordSample) {
      Sample s;
      r.decode_sample(rec, s);
      out.raw_data.emplace_back(s.raw.begin(), s.raw.end());
      s.raw = {};
      out.samples.push_back(s);
    }
  }
  for (const auto& e : r.errors()) out.errors.push_back(e.what());
  return out;
}

TEST(ReaderTest, AttrsAfterTheDataAndAttrsLargerThanTperfKnows) {
  TempDir dir;
  for (uint32_t size : {kAttrSizeVer8, kAttrSizeVer9, 200u}) {
    for (bool after : {false, true}) {
      SCOPED_TRACE(testing::Message() << "attr size " << size << (after ? " after data" : " before data"));
      Writer::Options o;
      o.attrs_after_data = after;
      Writer w(o);
      std::string path = dir.file("big.data");
      w.open(path);
      PerfEventAttr a = sampling_attr(kBasicSample, size);
      a.config3 = 0x3333;
      a.sig_data = 0x5151;
      w.add_attr(a, {7}, "cpu-clock");
      RecordBuilder rb = w.builder(0);
      for (int i = 0; i < 5; ++i) w.write_record(rb.sample(make_sample(10, 100 + i, 0x1000 + i)));
      w.finish();

      auto r = Reader::open(path);
      ASSERT_EQ(r->attrs().size(), 1u);
      EXPECT_EQ(r->attrs()[0].attr.size, size);
      EXPECT_EQ(r->attrs()[0].attr.sig_data, 0x5151u);
      EXPECT_EQ(r->attrs()[0].attr.config3, 0x3333u);
      EXPECT_EQ(r->attrs()[0].ids, std::vector<uint64_t>{7});
      auto back = read_all(*r);
      ASSERT_EQ(back.samples.size(), 5u);
      EXPECT_EQ(back.samples[4].ip, 0x1004u);
      EXPECT_EQ(back.samples[4].time, 104u);
      EXPECT_TRUE(back.errors.empty());
    }
  }
}

// Incompressible RAW payloads make one zstd flush larger than a record can hold, so the
// decompressed records straddle COMPRESSED records.
TEST(ReaderTest, RecordsStraddlingCompressedChunksComeBackWhole) {
  TempDir dir;
  std::mt19937_64 rng(42);
  PerfEventAttr a = sampling_attr(kBasicSample | kSampleRaw);
  std::vector<std::vector<uint8_t>> raws;
  for (int i = 0; i < 300; ++i) {
    std::vector<uint8_t> raw(static_cast<size_t>(100 + rng() % 3000) * 4 + 4);
    for (auto& b : raw) b = static_cast<uint8_t>(rng());
    raws.push_back(std::move(raw));
  }
  for (bool compressed2 : {false, true}) {
    SCOPED_TRACE(compressed2 ? "COMPRESSED2" : "COMPRESSED");
    std::vector<std::vector<uint8_t>> written;
    for (int level : {0, 3}) {
      Writer::Options o;
      o.compression_level = level;
      o.compressed2 = compressed2;
      o.compress_chunk = 256 * 1024;
      Writer w(o);
      std::string path = dir.file(level ? "z.data" : "plain.data");
      w.open(path);
      w.add_attr(a, {1}, "cpu-clock");
      RecordBuilder rb = w.builder(0);
      for (size_t i = 0; i < raws.size(); ++i) {
        Sample s = make_sample(5, 1000 + i, 0x400000 + i);
        s.raw = raws[i];
        w.write_record(rb.sample(s));
        if (i % 50 == 49) w.write_record(rb.finished_round());
      }
      w.finish();
      auto r = Reader::open(path);
      ReadBack back = read_all(*r);
      EXPECT_TRUE(back.errors.empty()) << back.errors.front();
      // Compare the unpacked records (COMPRESSED wrappers left out) with the plain file's.
      std::vector<std::vector<uint8_t>> records;
      for (auto& rec : back.records) {
        uint32_t type;
        std::memcpy(&type, rec.data(), 4);
        if (type != kRecordCompressed && type != kRecordCompressed2) records.push_back(rec);
      }
      if (level == 0) {
        written = records;
        EXPECT_EQ(r->stats().count(kRecordCompressed) + r->stats().count(kRecordCompressed2), 0u);
      } else {
        EXPECT_GT(r->stats().count(compressed2 ? kRecordCompressed2 : kRecordCompressed), raws.size() / 30);
        EXPECT_GT(r->stats().decompressed_bytes, r->stats().compressed_bytes / 2);
        ASSERT_EQ(records.size(), written.size());
        EXPECT_TRUE(records == written);
        ASSERT_EQ(back.samples.size(), raws.size());
        for (size_t i = 0; i < raws.size(); ++i) {
          ASSERT_GE(back.raw_data[i].size(), raws[i].size());
          ASSERT_TRUE(std::equal(raws[i].begin(), raws[i].end(), back.raw_data[i].begin())) << "sample " << i;
        }
      }
    }
  }
}

// Two events whose sample types differ: perf adds IDENTIFIER to both, and every record names
// its event by id, also the non-sample ones through their sample_id trailer.
TEST(ReaderTest, SeveralEventsAreToldApartByTheirIds) {
  TempDir dir;
  Writer w;
  std::string path = dir.file("two.data");
  w.open(path);
  PerfEventAttr clock = sampling_attr(kBasicSample | kSampleCallchain | kSampleIdentifier);
  PerfEventAttr task = sampling_attr(kBasicSample | kSampleIdentifier);
  task.config = kSwTaskClock;
  task.set_flag(kFlagComm);
  w.add_attr(clock, {11, 12}, "cpu-clock");
  w.add_attr(task, {21, 22}, "task-clock");
  RecordBuilder rc = w.builder(0), rt = w.builder(1);
  CommEvent comm;
  comm.pid = comm.tid = 9;
  comm.comm = "worker";
  SampleId sid;
  sid.pid = sid.tid = 9;
  sid.time = 50;
  sid.id = 22;
  w.write_record(rt.comm(comm, sid));
  for (int i = 0; i < 6; ++i) {
    Sample s = make_sample(9, 100 + i, 0x5000 + i);
    s.identifier = (i % 2) ? 12 : 21;
    if (i % 2) s.callchain = {kContextUser, 0x5000u + i, 0x6000};
    w.write_record((i % 2) ? rc.sample(s) : rt.sample(s));
  }
  // An id no attr has.
  Sample stray = make_sample(9, 200, 0x7000);
  stray.identifier = 99;
  w.write_record(rt.sample(stray));
  w.finish();

  auto r = Reader::open(path);
  Record rec;
  std::vector<std::string> events;
  Sample s;
  int unknown = 0;
  while (r->next(rec)) {
    if (rec.type == kRecordComm) {
      EXPECT_EQ(r->attr_index_of(rec), 1);
      Sample trailer;
      ASSERT_TRUE(r->decode_sample_id(rec, trailer));
      EXPECT_EQ(trailer.time, 50u);
      EXPECT_EQ(trailer.identifier, 22u);
      uint64_t t = 0;
      EXPECT_TRUE(r->record_time(rec, &t));
      EXPECT_EQ(t, 50u);
      continue;
    }
    if (rec.type != kRecordSample) continue;
    const EventAttr* ea = r->attr_of(rec);
    if (!ea) {
      ++unknown;
      EXPECT_THROW(r->decode_sample(rec, s), FormatError);
      continue;
    }
    events.push_back(ea->name);
    r->decode_sample(rec, s);
    EXPECT_EQ(s.callchain.size(), ea->name == "cpu-clock" ? 3u : 0u);
  }
  EXPECT_EQ(unknown, 1);
  EXPECT_EQ(events, (std::vector<std::string>{"task-clock", "cpu-clock", "task-clock", "cpu-clock", "task-clock",
                                              "cpu-clock"}));
}

TEST(ReaderTest, DeferredUserCallchainsAreRecognized) {
  TempDir dir;
  Writer w;
  std::string path = dir.file("deferred.data");
  w.open(path);
  PerfEventAttr a = sampling_attr(kBasicSample | kSampleCallchain);
  a.set_flag(kFlagDeferCallchain);
  a.set_flag(kFlagDeferOutput);
  w.add_attr(a, {1}, "cpu-clock");
  RecordBuilder rb = w.builder(0);
  Sample s = make_sample(33, 500, 0xffffffff81000010ULL);
  s.callchain = {kContextKernel, 0xffffffff81000010ULL, 0xffffffff81000020ULL, kContextUserDeferred, 0xb00000006ULL};
  w.write_record(rb.sample(s, kMiscKernel));
  CallchainDeferredEvent d;
  d.cookie = 0xb00000006ULL;
  d.ips = {0x401000, 0x402000, 0x403000};
  SampleId sid;
  sid.pid = sid.tid = 33;
  sid.time = 510;
  w.write_record(rb.callchain_deferred(d, sid));
  w.finish();

  auto r = Reader::open(path);
  Record rec;
  ASSERT_TRUE(r->next(rec));
  Sample got;
  r->decode_sample(rec, got);
  EXPECT_TRUE(got.deferred_callchain);
  EXPECT_EQ(got.deferred_cookie, 0xb00000006ULL);
  ASSERT_TRUE(r->next(rec));
  ASSERT_EQ(rec.type, kRecordCallchainDeferred);
  auto ev = decode_callchain_deferred(rec.body(), rec.misc, r->swapped(), rec.offset + 8);
  EXPECT_EQ(ev.cookie, 0xb00000006ULL);
  EXPECT_EQ(ev.ips, d.ips);
  Sample trailer;
  ASSERT_TRUE(r->decode_sample_id(rec, trailer));
  EXPECT_EQ(trailer.tid, 33u);
  EXPECT_EQ(trailer.time, 510u);
  EXPECT_FALSE(r->next(rec));
}

TEST(ReaderTest, UnknownRecordTypesAreCountedAndSkipped) {
  TempDir dir;
  Writer w;
  std::string path = dir.file("unknown.data");
  w.open(path);
  w.add_attr(sampling_attr(kBasicSample), {1}, "cpu-clock");
  RecordBuilder rb = w.builder(0);
  std::vector<uint8_t> body(24, 0xab);
  w.write_record(rb.sample(make_sample(1, 1, 0x10)));
  w.write_record(rb.record(30, 0, body));      // a kernel type from the future
  w.write_record(rb.record(120, 0, body));     // a tool type from the future
  w.write_record(rb.record(32770, 0, body));   // simpleperf's DSO record: recognized, skipped
  w.write_record(rb.record(40000, 0, body));   // nobody's
  w.write_record(rb.sample(make_sample(1, 2, 0x20)));
  w.finish();
  auto r = Reader::open(path);
  ReadBack back = read_all(*r);
  EXPECT_EQ(back.records.size(), 6u);
  EXPECT_EQ(back.samples.size(), 2u);
  EXPECT_EQ(r->stats().unknown_records, 3u);
  EXPECT_STREQ(record_type_name(32770), "SIMPLEPERF_DSO");
  EXPECT_EQ(r->stats().count(30), 1u);
  EXPECT_EQ(r->stats().count(32770), 1u);
  EXPECT_TRUE(back.errors.empty());
}

// A `perf record --threads` directory: `data` holds the header and the synthesized records,
// data.N the per-reader streams, merged by time.
TEST(ReaderTest, DirectoryLayoutMergesTheStreamsByTime) {
  TempDir dir;
  PerfEventAttr a = sampling_attr(kBasicSample);
  {
    Writer w;
    w.open(dir.file("data"));
    w.add_attr(a, {1}, "cpu-clock");
    w.set_dir_format(1);
    RecordBuilder rb = w.builder(0);
    CommEvent c;
    c.pid = c.tid = 4;
    c.comm = "synthesized";
    w.write_record(rb.comm(c));
    w.write_record(rb.finished_init());
    w.finish();
  }
  RecordBuilder rb(a);
  for (int part = 0; part < 3; ++part) {
    std::vector<uint8_t> bytes;
    for (int i = 0; i < 20; ++i) {
      uint64_t t = 1000 + static_cast<uint64_t>(i) * 3 + static_cast<uint64_t>(part);
      auto s = rb.sample(make_sample(static_cast<uint32_t>(part + 1), t, t));
      bytes.insert(bytes.end(), s.begin(), s.end());
      if (i % 5 == 4) {
        auto f = rb.finished_round();
        bytes.insert(bytes.end(), f.begin(), f.end());
      }
    }
    write_file(dir.file("data." + std::to_string(part)), bytes);
  }
  auto r = Reader::open(dir.path());
  EXPECT_TRUE(r->is_directory());
  ReadBack back = read_all(*r);
  EXPECT_TRUE(back.errors.empty());
  ASSERT_EQ(back.samples.size(), 60u);
  EXPECT_EQ(r->stats().count(kRecordComm), 1u);
  uint32_t first_type;
  std::memcpy(&first_type, back.records[0].data(), 4);
  EXPECT_EQ(first_type, kRecordComm);
  for (size_t i = 1; i < back.samples.size(); ++i) {
    EXPECT_LT(back.samples[i - 1].time, back.samples[i].time) << "sample " << i;
  }
}

// A file-mode file fed through a pipe is refused with a clear message; a pipe-mode one is read.
TEST(ReaderTest, RealPipe) {
  TempDir dir;
  Writer::Options o;
  o.pipe = true;
  Writer w(o);
  std::string path = dir.file("pipe.data");
  w.open(path);
  w.add_attr(sampling_attr(kBasicSample), {1}, "cpu-clock");
  RecordBuilder rb = w.builder(0);
  for (int i = 0; i < 2000; ++i) w.write_record(rb.sample(make_sample(3, static_cast<uint64_t>(i), 0x99)));
  w.finish();
  std::vector<uint8_t> bytes = read_file(path);

  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  std::thread feeder([&] {
    // Small writes so the reader sees partial records.
    for (size_t off = 0; off < bytes.size(); off += 777) {
      size_t n = std::min<size_t>(777, bytes.size() - off);
      ASSERT_EQ(write(fds[1], bytes.data() + off, n), static_cast<ssize_t>(n));
    }
    close(fds[1]);
  });
  auto r = Reader::from_fd(fds[0], "pipe", {});
  EXPECT_TRUE(r->is_pipe());
  ReadBack back = read_all(*r);
  feeder.join();
  close(fds[0]);
  EXPECT_EQ(back.samples.size(), 2000u);
  EXPECT_EQ(r->attrs().size(), 1u);
  EXPECT_TRUE(back.errors.empty());
}

// Every cut of a file must end in an error naming an offset (or, for pipe mode, at a record
// boundary, a shorter valid stream), never a crash or an out-of-bounds read (ASan checks).
TEST(ReaderTest, EveryTruncationIsReported) {
  TempDir dir;
  for (bool pipe_mode : {false, true}) {
    SCOPED_TRACE(pipe_mode ? "pipe" : "file");
    Writer::Options o;
    o.pipe = pipe_mode;
    Writer w(o);
    std::string path = dir.file("full.data");
    w.open(path);
    w.add_attr(sampling_attr(kBasicSample | kSampleCallchain), {1}, "cpu-clock");
    w.set_hostname("host");
    w.set_cmdline(std::vector<std::string>{"perf", "record"});
    RecordBuilder rb = w.builder(0);
    std::vector<uint64_t> boundaries = {16};  // a pipe stream may end right after its header
    CommEvent c;
    c.pid = c.tid = 2;
    c.comm = "app";
    w.write_record(rb.comm(c));
    for (int i = 0; i < 4; ++i) {
      Sample s = make_sample(2, 10 + static_cast<uint64_t>(i), 0x400 + i);
      s.callchain = {kContextUser, 0x400u + i, 0x500};
      w.write_record(rb.sample(s));
    }
    w.finish();
    std::vector<uint8_t> full = read_file(path);
    // Record boundaries of the data, from a clean read.
    {
      auto r = Reader::open(path);
      Record rec;
      while (r->next(rec)) boundaries.push_back(rec.offset + rec.size);
    }
    std::string cut = dir.file("cut.data");
    for (size_t n = 0; n < full.size(); ++n) {
      SCOPED_TRACE(n);
      write_file(cut, std::span<const uint8_t>(full.data(), n));
      bool reported = false;
      try {
        auto r = Reader::open(cut);
        ReadBack back = read_all(*r);
        reported = !back.errors.empty() || !r->features().warnings.empty();
      } catch (const FormatError& e) {
        reported = std::string(e.what()).rfind("offset 0x", 0) == 0;
      }
      bool at_boundary = pipe_mode && std::find(boundaries.begin(), boundaries.end(), n) != boundaries.end();
      if (!at_boundary) {
        EXPECT_TRUE(reported) << "cut at " << n << " of " << full.size();
      }
    }
  }
}

// A copy cut inside its last record (perf killed while writing, a copy cut off): the records
// before it come back, then the data ends with an error at that record's offset, not an exception
// that would lose them.
TEST(ReaderTest, RecordCutAtTheEndEndsTheDataWithAnErrorAfterTheWholeOnes) {
  TempDir dir;
  const std::string path = dir.file("whole.data");
  write_chain_samples(path, 20, 5, 0);
  std::vector<uint64_t> starts;
  {
    auto r = Reader::open(path);
    Record rec;
    while (r->next(rec)) {
      if (rec.type == kRecordSample) starts.push_back(rec.offset);
    }
    ASSERT_TRUE(r->errors().empty());
  }
  ASSERT_EQ(starts.size(), 20u);
  const std::vector<uint8_t> full = read_file(path);
  const std::string cut = dir.file("cut.data");
  write_file(cut, std::span<const uint8_t>(full.data(), starts.back() + 20));  // 20 bytes into the last
  auto r = Reader::open(cut);
  ReadBack back = read_all(*r);
  EXPECT_EQ(back.samples.size(), 19u);
  bool named = false;
  for (const FormatError& e : r->errors()) {
    if (std::string(e.what()).find(fmt::format("offset {:#x}: ", starts.back())) == 0 &&
        std::string(e.what()).find("runs past the end of the data") != std::string::npos) {
      named = true;
    }
  }
  EXPECT_TRUE(named) << "no error names the cut record at " << starts.back();
}

// A record shorter than its type's fixed fields is damage: reported at its offset and stepped
// over, the records around it read (the reader's quick path for records in its window checks the
// size as its general one does). Each of the two samples is made a kernel record too short for
// its type by its header.
TEST(ReaderTest, RecordShorterThanItsTypeIsReportedAndSteppedOver) {
  TempDir dir;
  const std::string path = dir.file("short.data");
  write_chain_samples(path, 20, 1, 0);
  std::vector<uint64_t> starts;
  uint16_t size = 0;
  {
    auto r = Reader::open(path);
    Record rec;
    while (r->next(rec)) {
      if (rec.type != kRecordSample) continue;
      starts.push_back(rec.offset);
      size = rec.size;
    }
  }
  ASSERT_EQ(starts.size(), 20u);
  ASSERT_LT(size, 8 + 64) << "set-up: a sample is no shorter than an MMAP2 record";
  std::vector<uint8_t> bytes = read_file(path);
  const std::vector<std::pair<size_t, uint32_t>> damaged{{3, kRecordMmap2}, {11, kRecordMmap2}};
  for (const auto& [i, type] : damaged) std::memcpy(bytes.data() + starts[i], &type, 4);
  const std::string bad = dir.file("bad.data");
  write_file(bad, bytes);
  auto r = Reader::open(bad);
  ReadBack back = read_all(*r);
  ASSERT_EQ(back.samples.size(), 18u);
  EXPECT_EQ(back.samples[3].time, 10u + 4);  // the one after the first damaged
  EXPECT_EQ(back.samples[17].time, 10u + 19);
  ASSERT_EQ(r->errors().size(), 2u);
  for (size_t k = 0; k < damaged.size(); ++k) {
    const std::string what = r->errors()[k].what();
    EXPECT_EQ(what.find(fmt::format("offset {:#x}: MMAP2 record of {} bytes is shorter than its 72 bytes", starts[damaged[k].first], size)), 0u) << what;
  }
  EXPECT_EQ(r->stats().by_type[kRecordMmap2], 0u);
}

// The file the cut-short tests below cut: about 12 MB of samples (60,000), so that the part past
// its first megabyte is far ahead of the reader when the cut comes.
void write_file_to_cut(const std::string& path) {
  write_chain_samples(path, 60000, 20, 0);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  ASSERT_GT(st.st_size, 8 << 20) << "set-up: the file is smaller than planned";
}

// A regular file mapped (Reader::Options::map): when another process cuts it short while tperf
// reads it, the pages past the new end fault (SIGBUS): the process ends with status 2 and a
// line naming the file, as for any unreadable input, not killed by the signal.
TEST(ReaderDeathTest, FileCutShortWhileReadEndsWithAnError) {
  TempDir dir;
  const std::string path = dir.file("shrinks.data");
  ASSERT_NO_FATAL_FAILURE(write_file_to_cut(path));
  EXPECT_EXIT(
      {
        auto r = Reader::open(path, Reader::Options{.map = true});
        Record rec;
        size_t n = 0;
        while (r->next(rec)) {
          // A few records in, the file loses all but its first megabyte.
          if (++n == 100 && ::truncate(path.c_str(), 1 << 20) != 0) std::_Exit(3);
        }
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(2), "shrinks.data: the file could not be read any more \\(it was cut short");
}

// The resident file pages this process has mapped (RssFile of /proc/self/status), in KiB.
long rss_file_kb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("RssFile:", 0) == 0) return std::stol(line.substr(8));
  }
  return -1;
}

// By default a regular file is read with pread() into a window that is reused, not mapped: the
// records are not stable (each stage that keeps one copies it), each holds the file's bytes at
// its offset while it is the current one, and none of the file's pages become resident in this
// process (RssFile stays where it was).
TEST(ReaderTest, ReadRecordsHoldTheFileBytesAndMapNothing) {
  TempDir dir;
  const std::string path = dir.file("big.data");
  write_chain_samples(path, 200000, 24, 0);
  const std::vector<uint8_t> file = read_file(path);
  ASSERT_GT(file.size(), 40u << 20) << "set-up: the file is smaller than planned";
  const long before = rss_file_kb();
  ASSERT_GE(before, 0) << "no RssFile in /proc/self/status";
  auto r = Reader::open(path);
  Record rec;
  size_t n = 0, stable = 0, samples = 0;
  long peak = 0;
  while (r->next(rec)) {
    if (rec.stable) ++stable;
    if (rec.type == kRecordSample) ++samples;
    ASSERT_LE(rec.offset + rec.bytes.size(), file.size());
    ASSERT_TRUE(std::equal(rec.bytes.begin(), rec.bytes.end(), file.begin() + static_cast<ptrdiff_t>(rec.offset)))
        << "the record at " << rec.offset << " is not the file's bytes";
    if (++n % 4096 == 0) peak = std::max(peak, rss_file_kb() - before);
  }
  EXPECT_TRUE(r->errors().empty());
  EXPECT_EQ(samples, 200000u);
  EXPECT_EQ(stable, 0u) << "records of a file read with pread() said to be stable";
  EXPECT_LT(peak, 2 << 10) << "KiB of file pages became resident while reading without a mapping";
}

// Read with pread() (the default), a file cut short by another process while tperf reads it ends
// the records early with an error that says where the data stopped: no signal, and the records
// read before are kept.
TEST(ReaderTest, FileCutShortWhileReadStopsWithAnErrorAtTheOffset) {
  TempDir dir;
  const std::string path = dir.file("shrinks.data");
  ASSERT_NO_FATAL_FAILURE(write_file_to_cut(path));
  auto r = Reader::open(path);
  Record rec;
  size_t n = 0;
  std::string error;
  try {
    while (r->next(rec)) {
      if (++n == 100) {
        ASSERT_EQ(::truncate(path.c_str(), 1 << 20), 0);
      }
    }
  } catch (const FormatError& e) {
    error = e.what();
  }
  if (error.empty()) {
    ASSERT_FALSE(r->errors().empty()) << "the records ended early without a word";
    error = r->errors().front().what();
  }
  EXPECT_GT(n, 100u);
  EXPECT_LT(n, 60000u) << "every record came back from a file cut to 1 MiB";
  // The offset where the data stopped (the command line adds the file's name), past the cut:
  // what the window had read before it is kept.
  EXPECT_NE(error.find("offset 0x"), std::string::npos) << error;
  EXPECT_NE(error.find("ends"), std::string::npos) << error;
  EXPECT_GE(std::stoull(error.substr(error.find("0x")), nullptr, 16), 1u << 20) << error;
}

// A regular file mapped whole (Reader::Options::map): its records come back as spans into the
// mapping (`stable`),
// which the ordering queue and the thread hand-over keep instead of copies. They must hold the
// file's bytes after the reader has moved on and given the pages behind it back, and the pages
// given back must leave the resident set: reading a 48 MB file keeps far less of it mapped.
// Records unpacked from zstd live in a buffer that is reused, and are not stable.
TEST(ReaderTest, MappedRecordsStayValidAndThePagesBehindAreGivenBack) {
  TempDir dir;
  const std::string path = dir.file("big.data");
  const std::string zpath = dir.file("big-z.data");
  write_chain_samples(path, 200000, 24, 0);
  write_chain_samples(zpath, 200000, 24, 3);
  const std::vector<uint8_t> file = read_file(path);
  ASSERT_GT(file.size(), 40u << 20) << "set-up: the file is smaller than planned";
  const long before = rss_file_kb();
  ASSERT_GE(before, 0) << "no RssFile in /proc/self/status";
  {
    auto r = Reader::open(path, Reader::Options{.map = true});
    Record rec;
    std::vector<std::pair<uint64_t, std::span<const uint8_t>>> kept;
    size_t n = 0, unstable = 0;
    long peak = 0;
    while (r->next(rec)) {
      if (!rec.stable) ++unstable;
      if (n++ % 997 == 0) kept.emplace_back(rec.offset, rec.bytes);
      if (n % 4096 == 0) peak = std::max(peak, rss_file_kb() - before);
    }
    EXPECT_TRUE(r->errors().empty());
    EXPECT_EQ(unstable, 0u) << "records of a mapped file that were not stable";
    ASSERT_GT(kept.size(), 200u);
    for (const auto& [off, bytes] : kept) {
      ASSERT_LE(off + bytes.size(), file.size());
      ASSERT_TRUE(std::equal(bytes.begin(), bytes.end(), file.begin() + static_cast<ptrdiff_t>(off)))
          << "the record at " << off << " changed after the reader moved on";
    }
    // The file is 48 MB; the reader keeps 8 MiB behind its position and the page it reads.
    EXPECT_LT(peak, 20 << 10) << "KiB of the file resident while reading it";
  }
  auto z = Reader::open(zpath);
  Record rec;
  size_t samples = 0;
  while (z->next(rec)) {
    if (rec.type != kRecordSample) continue;
    ++samples;
    EXPECT_TRUE(rec.from_compressed);
    ASSERT_FALSE(rec.stable) << "a record unpacked from zstd at " << rec.offset;
  }
  EXPECT_EQ(samples, 200000u);
}

// A few thousand random corruptions of a valid file: never a crash (ASan/UBSan watch), and
// any exception is a FormatError with an offset.
TEST(ReaderTest, RandomCorruptionNeverCrashes) {
  TempDir dir;
  Writer w;
  std::string path = dir.file("ok.data");
  w.open(path);
  w.add_attr(sampling_attr(kBasicSample | kSampleCallchain | kSampleRaw | kSampleRead), {1}, "cpu-clock");
  w.set_hostname("host");
  RecordBuilder rb = w.builder(0);
  for (int i = 0; i < 20; ++i) {
    Sample s = make_sample(2, 10 + static_cast<uint64_t>(i), 0x400 + i);
    s.callchain = {kContextUser, 0x400u + i, 0x500};
    std::vector<uint8_t> raw(12, 7);
    s.raw = raw;
    s.read.values.push_back({5, 0, 0});
    w.write_record(rb.sample(s));
  }
  w.finish();
  std::vector<uint8_t> full = read_file(path);
  std::mt19937 rng(7);
  std::string bad = dir.file("bad.data");
  for (int iter = 0; iter < 1500; ++iter) {
    std::vector<uint8_t> b = full;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) b[rng() % b.size()] = static_cast<uint8_t>(rng());
    write_file(bad, b);
    try {
      auto r = Reader::open(bad);
      Record rec;
      Sample s;
      while (r->next(rec)) {
        try {
          if (rec.type == kRecordSample) r->decode_sample(rec, s);
          else r->decode_sample_id(rec, s);
        } catch (const FormatError&) {
        }
      }
    } catch (const FormatError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("offset 0x", 0), 0u) << e.what();
    }
  }
}

}  // namespace
}  // namespace tperf::perfdata
