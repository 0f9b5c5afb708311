// DeferredCallchains inside OrderedEvents, on writer-made files: which samples wait, what a
// CALLCHAIN_DEFERRED completes (every waiting sample of its tid with the cookie; the others get
// their kernel part alone), delivery order, the end of the data, the bounds, malformed records.
// Every expected chain is written out here from the merge rules (perf-abi.md §6.2), by hand.
#include "session/deferred_callchains.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "perfdata/record_builder.h"
#include "perfdata/writer.h"
#include "session/ordered_events.h"
#include "test_util.h"

namespace tperf::session {
namespace {

using namespace perfdata;
using test::TempDir;

constexpr uint64_t K = kContextKernel;
constexpr uint64_t U = kContextUser;
constexpr uint64_t D = kContextUserDeferred;

PerfEventAttr deferred_attr(uint64_t extra_sample_type = 0, uint64_t read_format = 0) {
  PerfEventAttr a;
  a.type = kTypeSoftware;
  a.size = kAttrSizeVer7;
  a.config = kSwCpuClock;
  a.sample_period = 10000;
  a.sample_type = kSampleIp | kSampleTid | kSampleTime | kSampleCpu | kSamplePeriod | kSampleCallchain |
                  kSampleIdentifier | extra_sample_type;
  a.read_format = read_format;
  for (auto bit : {kFlagSampleIdAll, kFlagComm, kFlagTask, kFlagMmap2, kFlagDeferCallchain, kFlagDeferOutput}) {
    a.set_flag(bit);
  }
  return a;
}

// Builds a file record by record.
class File {
 public:
  explicit File(const TempDir& dir, bool swap = false, PerfEventAttr attr = deferred_attr())
      : path_(dir.file(swap ? "swapped.data" : "deferred.data")) {
    Writer::Options o;
    o.swap = swap;
    w_ = std::make_unique<Writer>(o);
    w_->open(path_);
    w_->add_attr(attr, {7}, "cpu-clock");
    rb_ = w_->builder(0);
  }
  void sample(uint32_t tid, uint64_t time, std::vector<uint64_t> chain, ReadData read = {}) {
    Sample s;
    s.identifier = 7;
    s.ip = chain.size() > 1 ? chain[1] : 0x1000;
    s.pid = s.tid = tid;
    s.time = time;
    s.period = 10000;
    s.callchain = std::move(chain);
    s.read = std::move(read);
    w_->write_record(rb_.sample(s, kMiscKernel));
  }
  void deferred(uint32_t tid, uint64_t time, uint64_t cookie, std::vector<uint64_t> ips) {
    w_->write_record(rb_.callchain_deferred({.cookie = cookie, .ips = std::move(ips)}, sid(tid, time)));
  }
  void lost(uint64_t time) { w_->write_record(rb_.lost(7, 3, sid(0, time))); }
  void round() { w_->write_record(rb_.finished_round()); }
  void raw(std::vector<uint8_t> bytes) { w_->write_record(bytes); }
  const RecordBuilder& builder() const { return rb_; }
  SampleId sid(uint32_t tid, uint64_t time) const { return {.pid = tid, .tid = tid, .time = time, .id = 7, .cpu = 0}; }
  std::string finish() {
    w_->finish();
    return path_;
  }

 private:
  std::string path_;
  std::unique_ptr<Writer> w_;
  RecordBuilder rb_;
};

std::string chain_text(const std::vector<uint64_t>& chain) {
  std::string out;
  for (uint64_t ip : chain) {
    if (!out.empty()) out += ' ';
    if (ip == K) {
      out += "K";
    } else if (ip == U) {
      out += "U";
    } else if (ip == D) {
      out += "D";
    } else {
      out += fmt::format("{:x}", ip);
    }
  }
  return out;
}

struct Result {
  std::vector<std::string> lines;  // "tid@time: chain" per sample, "TYPE@time" for other records
  DeferredCallchains::Stats stats;
  std::vector<FormatError> errors;
};

Result read_all(const std::string& path, OrderedEvents::Options options = {}) {
  auto reader = Reader::open(path);
  Result r;
  OrderedEvents ordered(
      *reader,
      [&](const Record& rec, uint64_t time) {
        if (rec.type == kRecordFinishedRound || rec.type == kRecordComm) return;
        if (rec.type != kRecordSample) {
          r.lines.push_back(fmt::format("{}@{}", record_type_name(rec.type), time));
          return;
        }
        Sample s;
        reader->decode_sample(rec, s);
        EXPECT_EQ(s.time, time);
        EXPECT_EQ(rec.size, rec.bytes.size());
        r.lines.push_back(fmt::format("{}@{}: {}", s.tid, s.time, chain_text(s.callchain)));
      },
      options);
  Record rec;
  while (reader->next(rec)) ordered.push(rec);
  ordered.flush_all();
  r.stats = ordered.deferred_stats();
  r.errors = ordered.deferred_errors();
  return r;
}

using Lines = std::vector<std::string>;

TEST(DeferredCallchains, OneRecordCompletesEveryWaitingSampleOfItsTid) {
  TempDir dir;
  File f(dir);
  f.sample(10, 100, {K, 0xffffffff81000010, 0xffffffff81000020, D, 0xb00000006});
  f.sample(10, 200, {K, 0xffffffff81000030, D, 0xb00000006});
  f.sample(10, 300, {K, 0xffffffff81000040, 0xffffffff81000050, D, 0xb00000006});
  f.deferred(10, 400, 0xb00000006, {0x401000, 0x402000, 0x403000});
  Result r = read_all(f.finish());
  EXPECT_EQ(r.lines, (Lines{
                         "10@100: K ffffffff81000010 ffffffff81000020 U 401000 402000 403000",
                         "10@200: K ffffffff81000030 U 401000 402000 403000",
                         "10@300: K ffffffff81000040 ffffffff81000050 U 401000 402000 403000",
                     }));
  EXPECT_EQ(r.stats.deferred_samples, 3u);
  EXPECT_EQ(r.stats.deferred_records, 1u);
  EXPECT_EQ(r.stats.merged, 3u);
  EXPECT_EQ(r.stats.mismatched, 0u);
  EXPECT_EQ(r.stats.never_completed, 0u);
  EXPECT_EQ(r.stats.peak_waiting, 3u);
}

TEST(DeferredCallchains, OtherTidsAndPlainSamplesAreNotHeldUp) {
  TempDir dir;
  File f(dir);
  f.sample(10, 100, {K, 0xffffffff81000010, D, 0xa1});
  f.sample(20, 110, {K, 0xffffffff81000020, U, 0x501000, 0x502000});  // not deferred
  f.sample(20, 120, {K, 0xffffffff81000030, D, 0xb1});
  f.sample(10, 130, {K, 0xffffffff81000040, D, 0xa1});
  f.deferred(20, 140, 0xb1, {0x503000});
  f.sample(20, 150, {U, 0x504000});  // a user-mode sample with an in-place chain
  f.deferred(10, 160, 0xa1, {0x401000, 0x402000});
  Result r = read_all(f.finish());
  // The waiting samples go out when their record comes, after what was stamped in between.
  EXPECT_EQ(r.lines, (Lines{
                         "20@110: K ffffffff81000020 U 501000 502000",
                         "20@120: K ffffffff81000030 U 503000",
                         "20@150: U 504000",
                         "10@100: K ffffffff81000010 U 401000 402000",
                         "10@130: K ffffffff81000040 U 401000 402000",
                     }));
  EXPECT_EQ(r.stats.merged, 3u);
  EXPECT_EQ(r.stats.deferred_samples, 3u);
}

TEST(DeferredCallchains, MismatchedCookieLeavesTheKernelPartAlone) {
  TempDir dir;
  File f(dir);
  f.sample(10, 100, {K, 0xffffffff81000010, D, 0xc1});  // its record was lost
  f.lost(150);
  f.sample(10, 200, {K, 0xffffffff81000020, D, 0xc2});
  f.deferred(10, 300, 0xc2, {0x401000});
  Result r = read_all(f.finish());
  EXPECT_EQ(r.lines, (Lines{
                         "LOST@150",
                         "10@100: K ffffffff81000010",
                         "10@200: K ffffffff81000020 U 401000",
                     }));
  EXPECT_EQ(r.stats.mismatched, 1u);
  EXPECT_EQ(r.stats.merged, 1u);
}

TEST(DeferredCallchains, SamplesLeftAtTheEndGoOutInTimeOrderWithoutUserPart) {
  TempDir dir;
  File f(dir);
  f.sample(10, 100, {K, 0xffffffff81000010, D, 0xd1});
  f.sample(20, 150, {K, 0xffffffff81000020, D, 0xd2});
  f.sample(10, 200, {K, 0xffffffff81000030, D, 0xd1});
  f.deferred(30, 250, 0xd3, {0x401000});  // another task's record completes nothing here
  f.sample(20, 300, {D, 0xd4});           // sampled in user mode: no kernel part at all
  Result r = read_all(f.finish());
  EXPECT_EQ(r.lines, (Lines{
                         "10@100: K ffffffff81000010",
                         "20@150: K ffffffff81000020",
                         "10@200: K ffffffff81000030",
                         "20@300: ",
                     }));
  EXPECT_EQ(r.stats.never_completed, 4u);
  EXPECT_EQ(r.stats.unmatched_records, 1u);
  EXPECT_EQ(r.stats.merged, 0u);
}

TEST(DeferredCallchains, RecordBeforeItsSamplesInTheFileIsOrderedAfterThem) {
  TempDir dir;
  File f(dir);
  // Two ring buffers drained in turn: the record (CPU 1, after the task moved) is written in an
  // earlier round than the samples (CPU 0) it completes, with a later timestamp.
  f.sample(10, 50, {K, 0xffffffff81000001, U, 0x400001});
  f.deferred(10, 400, 0xe1, {0x401000, 0x402000});
  f.round();
  f.sample(10, 100, {K, 0xffffffff81000010, D, 0xe1});
  f.sample(10, 300, {K, 0xffffffff81000030, D, 0xe1});
  f.round();
  Result r = read_all(f.finish());
  EXPECT_EQ(r.lines, (Lines{
                         "10@50: K ffffffff81000001 U 400001",
                         "10@100: K ffffffff81000010 U 401000 402000",
                         "10@300: K ffffffff81000030 U 401000 402000",
                     }));
  EXPECT_EQ(r.stats.merged, 2u);
}

TEST(DeferredCallchains, RecordStampedBeforeItsSamplesCompletesNothing) {
  TempDir dir;
  File f(dir);
  // Time order is the rule: a record older than the samples cannot be theirs.
  f.deferred(10, 90, 0xf1, {0x401000});
  f.sample(10, 100, {K, 0xffffffff81000010, D, 0xf1});
  Result r = read_all(f.finish());
  EXPECT_EQ(r.lines, (Lines{"10@100: K ffffffff81000010"}));
  EXPECT_EQ(r.stats.unmatched_records, 1u);
  EXPECT_EQ(r.stats.never_completed, 1u);
}

TEST(DeferredCallchains, ThousandsOfWaitingSamplesAreAllMerged) {
  TempDir dir;
  File f(dir);
  for (uint64_t i = 0; i < 5000; ++i) f.sample(10, 1000 + i, {K, 0xffffffff81000000 + i, D, 0x77});
  f.deferred(10, 9000, 0x77, {0x401000, 0x402000});
  Result r = read_all(f.finish());
  ASSERT_EQ(r.lines.size(), 5000u);
  EXPECT_EQ(r.lines.front(), "10@1000: K ffffffff81000000 U 401000 402000");
  EXPECT_EQ(r.lines[2500], "10@3500: K ffffffff810009c4 U 401000 402000");
  EXPECT_EQ(r.lines.back(), "10@5999: K ffffffff81001387 U 401000 402000");
  EXPECT_EQ(r.stats.merged, 5000u);
  EXPECT_EQ(r.stats.delivered_early, 0u);
  EXPECT_EQ(r.stats.peak_waiting, 5000u);
}

TEST(DeferredCallchains, PerTidBoundDeliversTheOldestEarly) {
  TempDir dir;
  File f(dir);
  for (uint64_t i = 0; i < 10; ++i) f.sample(10, 100 + i, {K, 0xffffffff81000000 + i, D, 0x88});
  f.sample(20, 150, {K, 0xffffffff82000000, D, 0x99});
  f.deferred(10, 200, 0x88, {0x401000});
  f.deferred(20, 210, 0x99, {0x501000});
  OrderedEvents::Options o;
  o.deferred.max_waiting_per_tid = 4;
  Result r = read_all(f.finish(), o);
  Lines want;
  // Samples 0..5 of tid 10 went out as samples 4..9 arrived, with their kernel part alone.
  for (uint64_t i = 0; i < 6; ++i) want.push_back(fmt::format("10@{}: K {:x}", 100 + i, 0xffffffff81000000 + i));
  for (uint64_t i = 6; i < 10; ++i) {
    want.push_back(fmt::format("10@{}: K {:x} U 401000", 100 + i, 0xffffffff81000000 + i));
  }
  want.push_back("20@150: K ffffffff82000000 U 501000");
  EXPECT_EQ(r.lines, want);
  EXPECT_EQ(r.stats.delivered_early, 6u);
  EXPECT_EQ(r.stats.merged, 5u);
  EXPECT_EQ(r.stats.peak_waiting, 5u);
}

TEST(DeferredCallchains, TotalBoundDeliversTheOldestOfAnyTid) {
  TempDir dir;
  File f(dir);
  f.sample(10, 100, {K, 0xffffffff81000010, D, 0x1});
  f.sample(20, 110, {K, 0xffffffff81000020, D, 0x2});
  f.sample(30, 120, {K, 0xffffffff81000030, D, 0x3});
  f.sample(20, 130, {K, 0xffffffff81000040, D, 0x2});
  f.deferred(20, 140, 0x2, {0x402000});
  f.deferred(30, 150, 0x3, {0x403000});
  OrderedEvents::Options o;
  o.deferred.max_waiting = 3;
  Result r = read_all(f.finish(), o);
  EXPECT_EQ(r.lines, (Lines{
                         "10@100: K ffffffff81000010",
                         "20@110: K ffffffff81000020 U 402000",
                         "20@130: K ffffffff81000040 U 402000",
                         "30@120: K ffffffff81000030 U 403000",
                     }));
  EXPECT_EQ(r.stats.delivered_early, 1u);
  EXPECT_EQ(r.stats.merged, 3u);
}

TEST(DeferredCallchains, ByteBoundDeliversTheOldestEarly) {
  TempDir dir;
  File f(dir);
  // Each of these samples is 8 (header) + 32 (identifier, ip, pid/tid, time) + 16 (cpu, period)
  // + 8 (nr) + 4 * 8 (chain) = 96 bytes: a 200-byte bound holds two.
  f.sample(10, 100, {K, 0xffffffff81000010, D, 0x1});
  f.sample(20, 110, {K, 0xffffffff81000020, D, 0x2});
  f.sample(30, 120, {K, 0xffffffff81000030, D, 0x3});
  f.deferred(20, 130, 0x2, {0x402000});
  f.deferred(30, 140, 0x3, {0x403000});
  OrderedEvents::Options o;
  o.deferred.max_waiting_bytes = 200;
  Result r = read_all(f.finish(), o);
  EXPECT_EQ(r.lines, (Lines{
                         "10@100: K ffffffff81000010",
                         "20@110: K ffffffff81000020 U 402000",
                         "30@120: K ffffffff81000030 U 403000",
                     }));
  EXPECT_EQ(r.stats.delivered_early, 1u);
  EXPECT_EQ(r.stats.peak_waiting_bytes, 3u * 96);
}

TEST(DeferredCallchains, MergeOffPassesEverythingThroughRaw) {
  TempDir dir;
  File f(dir);
  f.sample(10, 100, {K, 0xffffffff81000010, D, 0xb00000006});
  f.deferred(10, 200, 0xb00000006, {0x401000});
  OrderedEvents::Options o;
  o.merge_deferred_callchains = false;
  Result r = read_all(f.finish(), o);
  EXPECT_EQ(r.lines, (Lines{"10@100: K ffffffff81000010 D b00000006", "CALLCHAIN_DEFERRED@200"}));
  EXPECT_FALSE(r.stats.any());
}

TEST(DeferredCallchains, ForeignByteOrderAndReadValuesBeforeTheChain) {
  TempDir dir;
  // A group READ in front of the callchain: its size comes from the read_format.
  File f(dir, /*swap=*/true, deferred_attr(kSampleRead, kReadGroup | kReadId | kReadTotalTimeEnabled));
  ReadData rd;
  rd.time_enabled = 5;
  rd.values = {{.value = 1, .id = 7}, {.value = 2, .id = 8}};
  f.sample(10, 100, {K, 0xffffffff81000010, D, 0x1234}, rd);
  f.deferred(10, 200, 0x1234, {0x401000, 0x402000});
  Result r = read_all(f.finish());
  EXPECT_EQ(r.lines, (Lines{"10@100: K ffffffff81000010 U 401000 402000"}));
  EXPECT_EQ(r.stats.merged, 1u);
}

TEST(DeferredCallchains, MalformedRecordIsAnErrorWithItsOffset) {
  TempDir dir;
  File f(dir);
  f.sample(10, 100, {K, 0xffffffff81000010, D, 0x5});
  // A CALLCHAIN_DEFERRED whose nr claims far more ips than the record holds.
  std::vector<uint8_t> body(24, 0);
  uint64_t cookie = 0x5, nr = 1000000, ip = 0x401000;
  std::memcpy(body.data(), &cookie, 8);
  std::memcpy(body.data() + 8, &nr, 8);
  std::memcpy(body.data() + 16, &ip, 8);
  f.raw(f.builder().record(kRecordCallchainDeferred, kMiscUser, body, f.sid(10, 200)));
  // And one cut short of even its cookie and nr.
  f.raw(f.builder().record(kRecordCallchainDeferred, kMiscUser, std::span<const uint8_t>(body).first(8),
                           f.sid(10, 250)));
  std::string path = f.finish();
  Result r = read_all(path);
  EXPECT_EQ(r.lines, (Lines{"10@100: K ffffffff81000010"}));
  EXPECT_EQ(r.stats.malformed, 2u);
  EXPECT_EQ(r.stats.never_completed, 1u);
  ASSERT_EQ(r.errors.size(), 2u);
  // The records follow the header (104 bytes) and the attr section... their offsets are the
  // reader's: check that they are the offsets of the two records in the file.
  auto reader = Reader::open(path);
  std::vector<uint64_t> offsets;
  Record rec;
  while (reader->next(rec)) {
    if (rec.type == kRecordCallchainDeferred) offsets.push_back(rec.offset);
  }
  ASSERT_EQ(offsets.size(), 2u);
  EXPECT_GE(r.errors[0].offset(), offsets[0]);
  EXPECT_LT(r.errors[0].offset(), offsets[0] + 72);
  EXPECT_GE(r.errors[1].offset(), offsets[1]);
  EXPECT_LT(r.errors[1].offset(), offsets[1] + 72);
}

// Random interleavings (tids, cookies, rounds, records lost or malformed, tight bounds): every
// sample comes out exactly once, none with a marker or cookie left, and each deferred sample is
// counted in exactly one outcome.
TEST(DeferredCallchains, EverySampleComesOutOnceWhateverTheInterleaving) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    TempDir dir;
    File f(dir);
    size_t samples = 0;
    uint64_t t = 1000;
    for (int i = 0; i < 400; ++i) {
      t += rng() % 50;
      const uint32_t tid = 1 + rng() % 4;
      const uint64_t cookie = 1 + rng() % 3;
      switch (rng() % 8) {
        case 0:
          f.deferred(tid, t, cookie, {0x401000 + tid, 0x402000});
          break;
        case 1: {
          std::vector<uint8_t> body(16 + (rng() % 3) * 8, 0xff);  // nr = 2^64-1
          f.raw(f.builder().record(kRecordCallchainDeferred, kMiscUser, body, f.sid(tid, t)));
          break;
        }
        case 2:
          f.round();
          break;
        case 3:
          f.sample(tid, t, {K, 0xffffffff81000000 + i, U, 0x500000});
          ++samples;
          break;
        default:
          f.sample(tid, t, {K, 0xffffffff81000000 + i, D, cookie});
          ++samples;
          break;
      }
    }
    OrderedEvents::Options o;
    o.deferred.max_waiting_per_tid = 1 + rng() % 8;
    o.deferred.max_waiting = 1 + rng() % 16;
    Result r = read_all(f.finish(), o);
    size_t delivered = 0;
    for (const auto& line : r.lines) {
      if (line.find('@') != std::string::npos && line.find(':') != std::string::npos) {
        ++delivered;
        EXPECT_EQ(line.find(" D"), std::string::npos) << line;
      }
    }
    EXPECT_EQ(delivered, samples) << "seed " << seed;
    const auto& st = r.stats;
    EXPECT_EQ(st.deferred_samples, st.merged + st.mismatched + st.never_completed + st.delivered_early)
        << "seed " << seed;
    EXPECT_LE(st.peak_waiting, o.deferred.max_waiting + 1) << "seed " << seed;
    EXPECT_EQ(st.malformed, r.errors.size());
  }
}

}  // namespace
}  // namespace tperf::session
