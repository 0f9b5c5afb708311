// Tracepoint events no EVENT_DESC or EVENT_UPDATE names (pipe files of older perf): perf names
// them "system:name" from the format files in the TRACING_DATA (the pipe's HEADER_TRACING_DATA
// record, the file's feature), where tperf printed "tracepoint:<id>". A pipe file made with our
// writer from the TRACING_DATA perf 6.1 recorded here, against perf 6.1.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "e2e/recording_util.h"
#include "perfdata/reader.h"
#include "perfdata/record_builder.h"
#include "perfdata/writer.h"
#include "test_util.h"

namespace tperf::test::e2e {
namespace {

using namespace tperf::perfdata;

TEST(TracepointNames, FromTracingDataOfAPipeAsPerf) {
  TPERF_REQUIRE_PERF();
  ASSERT_EQ(ensure_tracefs(), "") << "set-up failed";
  const std::string src = scratch_dir() + "/tracepoint-names-src.data";
  TPERF_REQUIRE_RECORDING(
      rec, record_with_perf(fmt::format("timeout 60 perf record -q -e sched:sched_switch -e sched:sched_process_exec "
                                        "-o {} -- sleep 0.05",
                                        shell_quote(src)),
                            src));
  auto reader = Reader::open(rec.path);
  ASSERT_TRUE(reader->features().raw.count(kFeatTracingData)) << "set-up failed: perf stored no TRACING_DATA";
  std::vector<uint8_t> tracing = reader->features().raw.at(kFeatTracingData);
  tracing.resize((tracing.size() + 7) & ~size_t{7}, 0);  // perf pads it to 8 bytes in a pipe
  ASSERT_EQ(reader->attrs().size(), 2u);

  Writer::Options opts;
  opts.pipe = true;
  opts.event_desc = false;  // no EVENT_DESC either
  Writer w(opts);
  TempDir dir;
  const std::string path = dir.file("unnamed-tracepoints.data");
  w.open(path);
  std::vector<PerfEventAttr> attrs;
  for (size_t i = 0; i < 2; ++i) {
    PerfEventAttr a = test::cpu_clock_attr(kSampleIp | kSampleTid | kSampleTime | kSampleId | kSamplePeriod);
    a.type = kTypeTracepoint;
    a.config = reader->attrs()[i].attr.config;
    a.sample_period = 1;
    w.add_attr(a, {100 + i}, "");  // no name: no EVENT_UPDATE
    attrs.push_back(a);
  }
  // HEADER_TRACING_DATA: an 12-byte record announcing the payload that follows it.
  std::vector<uint8_t> rec_bytes(12, 0);
  const uint32_t type = kRecordHeaderTracingData, size32 = static_cast<uint32_t>(tracing.size());
  const uint16_t hsize = 12;
  std::memcpy(rec_bytes.data(), &type, 4);
  std::memcpy(rec_bytes.data() + 6, &hsize, 2);
  std::memcpy(rec_bytes.data() + 8, &size32, 4);
  rec_bytes.insert(rec_bytes.end(), tracing.begin(), tracing.end());
  w.write_record(rec_bytes);
  uint64_t now = 1000;
  for (int i = 0; i < 4; ++i) {
    RecordBuilder rb(attrs[i % 2]);
    Sample s;
    s.pid = s.tid = 4242;
    s.time = ++now;
    s.id = 100 + i % 2;
    s.period = 1;
    s.ip = 0xffffffff81000000ULL;
    w.write_record(rb.sample(s, kMiscKernel));
  }
  w.finish();

  ComparedOutputs c = compare_outputs(fmt::format("perf script -F tid,event -i {} 2>/dev/null", shell_quote(path)),
                                      fmt::format("{} script -F tid,event -i {}", TPERF_BINARY, shell_quote(path)),
                                      path);
  EXPECT_EQ(c.diff, "") << "diff perf tperf";
  EXPECT_EQ(c.perf_lines, 4u) << "perf printed something else";
  CommandResult t = run(fmt::format("{} script -F event -i {}", TPERF_BINARY, shell_quote(path)));
  EXPECT_NE(t.out.find("sched:sched_switch:"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("sched:sched_process_exec:"), std::string::npos) << t.out;
}

}  // namespace
}  // namespace tperf::test::e2e
