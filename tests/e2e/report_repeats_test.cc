// Samples that repeat the one before them (the same bytes but for the time) are applied again
// by report without being decoded and looked up (ReplayHandlers::on_repeat), on one thread and
// on two. perf report 6.1 decides, on files made with our writer that hold runs of such samples
// next to near-repeats that must not join them: another period, cpu or stack, a thread renamed
// between two of them by a COMM that came in out of order, and garbage frames, whose entries
// perf's walk may miss (report then adds such a sample on its own, in its place).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "analysis/sample_path.h"
#include "e2e/recording_util.h"
#include "perfdata/reader.h"
#include "perfdata/record_builder.h"
#include "perfdata/writer.h"
#include "test_util.h"

namespace tperf::test::e2e {
namespace {

using namespace tperf::perfdata;

constexpr uint64_t kBase = 0x400000;
constexpr uint64_t kSampleType = kSampleIp | kSampleTid | kSampleTime | kSampleId | kSampleCpu | kSamplePeriod |
                                 kSampleCallchain;

struct Built {
  std::string path;
  size_t samples = 0;
  size_t repeats = 0;  // samples written right after an equal one (all but the time)
};

// Two threads of one process. Each step writes a run of 1-5 equal samples of one thread, or a
// near-repeat of the sample before (one field changed); rounds end every 40 records. Half-way,
// thread 102 is renamed by a COMM that lies in time between two equal samples which come in a
// later round (out of order), so that they are delivered one after the other with the COMM
// already applied.
Built write_repeats_file(const TempDir& dir, uint32_t seed, int steps) {
  const PerfEventAttr attr = test::cpu_clock_attr(kSampleType);
  RecordBuilder rb(attr);
  std::vector<std::vector<uint8_t>> records;
  Built built;
  uint64_t now = 1000;
  SampleId sid;
  sid.pid = 100;
  sid.id = 1;
  auto comm_record = [&](int32_t tid, const char* name, uint64_t time) {
    CommEvent comm;
    comm.pid = 100;
    comm.tid = tid;
    comm.comm = name;
    sid.tid = tid;
    sid.time = time;
    return rb.comm(comm, sid);
  };
  records.push_back(comm_record(100, "main", ++now));
  records.push_back(comm_record(102, "worker", ++now));
  const Mmap2Event m = test::executable_map(100, kBase, "/nonexistent/tperf-repeats/app");
  sid.tid = 100;
  sid.time = ++now;
  records.push_back(rb.mmap2(m, sid));

  std::mt19937 rng(seed);
  std::vector<uint64_t> addrs = {kBase + 0x1100, kBase + 0x1200, kBase + 0x1300, kBase + 0x1400,
                                 0xffffffff81000100ULL, 0xbe552274c0854800ULL, 0x1a1a1a1a1a1a1a1aULL};
  auto random_sample = [&] {
    Sample s;
    s.pid = 100;
    s.tid = rng() % 2 ? 100 : 102;
    s.cpu = static_cast<uint32_t>(rng() % 2);
    s.id = 1;
    s.period = rng() % 4 ? 1000 : 1000 + rng() % 3;
    s.callchain.push_back(kContextUser);
    const size_t depth = 1 + rng() % 4;
    for (size_t d = 0; d < depth; ++d) s.callchain.push_back(addrs[rng() % addrs.size()]);
    s.ip = s.callchain[1];
    return s;
  };
  // Every sample goes through here: counted, and as a repeat when it equals the sample written
  // before it (in file order) in all but the time.
  Sample written;
  bool any_written = false;
  auto counted = [&](const Sample& s) {
    const bool repeat = any_written && s.tid == written.tid && s.cpu == written.cpu && s.period == written.period &&
                        s.callchain == written.callchain && s.ip == written.ip;
    ++built.samples;
    built.repeats += repeat;
    written = s;
    any_written = true;
    return rb.sample(s, kMiscUser);
  };
  size_t since_round = 0;
  auto add = [&](const Sample& s) {
    records.push_back(counted(s));
    if (++since_round == 40) {
      records.push_back(rb.finished_round());
      since_round = 0;
    }
  };
  Sample last = random_sample();
  for (int step = 0; step < steps; ++step) {
    if (step == steps / 2) {
      // Round a: a sample far ahead in time, then the COMM, which the end of round b delivers
      // (everything up to round a's latest time goes); round c: two equal samples of 102 from
      // either side of the COMM's time, older than what was delivered.
      records.push_back(rb.finished_round());
      Sample ahead = random_sample();
      ahead.time = now + 1000;
      records.push_back(counted(ahead));
      records.push_back(rb.finished_round());
      records.push_back(comm_record(102, "renamed", now + 50));
      records.push_back(rb.finished_round());
      Sample s = random_sample();
      s.tid = 102;
      s.time = now + 10;
      records.push_back(counted(s));
      s.time = now + 60;
      records.push_back(counted(s));
      records.push_back(rb.finished_round());
      now += 2000;
      since_round = 0;
      continue;
    }
    const uint32_t what = rng() % 8;
    Sample s = last;
    if (what < 4) {
      s = random_sample();  // a new run
    } else if (what == 4) {
      s.period += 1;  // near-repeats: one field differs
    } else if (what == 5) {
      s.cpu ^= 1;
    } else if (what == 6) {
      s.callchain.back() = addrs[rng() % addrs.size()];
    }  // 7: a repeat
    const size_t run = what < 4 ? 1 + rng() % 5 : 1;
    for (size_t i = 0; i < run; ++i) {
      s.time = ++now;
      add(s);
    }
    last = s;
  }
  built.path = dir.file(fmt::format("repeats-{}.data", seed));
  Writer w;
  w.open(built.path);
  w.add_attr(attr, {1}, "cpu-clock");
  for (const auto& r : records) w.write_record(r);
  w.finish();
  return built;
}

// The files hold what the test means: many samples equal to the one before them but for the
// time, which SampleRepeats tells as such, and no others (as each record is delivered, in order).
TEST(ReportRepeats, TheFilesHoldRepeatsAndOnlyThoseAreTold) {
  TempDir dir;
  Built b = write_repeats_file(dir, 7, 600);
  auto reader = Reader::open(b.path);
  analysis::SampleRepeats repeats(*reader);
  std::vector<uint8_t> before;
  Record rec;
  size_t told = 0, samples = 0;
  while (reader->next(rec)) {
    if (rec.type != kRecordSample) continue;  // file order: the equal samples are written adjacent
    ++samples;
    told += repeats.repeats(rec, before);
    before.assign(rec.bytes.begin(), rec.bytes.end());
  }
  EXPECT_EQ(samples, b.samples);
  EXPECT_EQ(told, b.repeats);
  EXPECT_GE(b.repeats, b.samples / 4) << "too few repeats to test";
}

TEST(ReportRepeats, ReportAsPerfOnOneThreadAndTwo) {
  TPERF_REQUIRE_PROGRAM("perf");
  TempDir dir;
  for (uint32_t seed : {1u, 2u, 3u}) {
    const Built b = write_repeats_file(dir, seed, 300 + 200 * static_cast<int>(seed));
    for (const char* args : {"", "--no-children", "-g none", "-s cpu,sym", "-s comm,sym -g caller", "-s pid,dso"}) {
      for (const char* jobs : {"-j 1", "-j 2"}) {
        SCOPED_TRACE(fmt::format("seed {} args '{}' {}", seed, args, jobs));
        ComparedOutputs c = compare_outputs(
            fmt::format("perf report --stdio -q -n -i {} {} 2>/dev/null | grep -v '^$'", shell_quote(b.path), args),
            fmt::format("{} report --stdio -q -n {} -i {} {} | grep -v '^$'", TPERF_BINARY, jobs, shell_quote(b.path),
                        args),
            b.path);
        EXPECT_EQ(c.diff, "") << "diff perf tperf";
        EXPECT_GE(c.perf_lines, 8u) << "perf printed too little";
      }
    }
  }
}

}  // namespace
}  // namespace tperf::test::e2e
