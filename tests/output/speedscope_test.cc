// speedscope files of small stack tables built by hand; the expected JSON is written by hand from
// the file format's schema (shared frames, one sampled profile per thread, frames root first).
#include "output/speedscope.h"

#include <gtest/gtest.h>

#include "output/profile_fixture.h"

namespace tperf::output {
namespace {

analysis::Profile tiny() {
  analysis::Profile p;
  p.mappings = {{"/bin/x", "x", "", 0x1000, 0x2000, 0, false}};
  p.functions = {{"main", "x.c"}, {"work", ""}, {"[unknown]", ""}};
  analysis::ProfileFrame f0, f1, f2;
  f0.function = 0;
  f0.mapping = 0;
  f1.function = 1;
  f1.mapping = 0;
  f1.line = 12;
  f1.file = "x.c";
  f2.function = 2;  // no symbol, no map
  p.frames = {f0, f1, f2};
  p.stacks = {{analysis::kNoIndex, 0, 0}, {0, 1, 1}, {0, 2, 1}};
  p.threads = {{7, 7, "x \"quoted\""}, {7, 8, "x"}};
  p.events = {{"task-clock", "nanoseconds"}};
  p.counts = {{0, 0, 1, 2, 2000}, {1, 0, 2, 1, 1000}};
  return p;
}

TEST(Speedscope, CountsWithoutTimeLine) {
  EXPECT_EQ(encode_speedscope(tiny(), "perf.data"),
            "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"exporter\":\"tperf\","
            "\"name\":\"perf.data\",\"activeProfileIndex\":0,"
            "\"shared\":{\"frames\":[{\"name\":\"main\",\"file\":\"x.c\"},{\"name\":\"work\",\"file\":\"x.c\",\"line\":12},"
            "{\"name\":\"[unknown]\"}]},"
            "\"profiles\":["
            "{\"type\":\"sampled\",\"name\":\"x \\\"quoted\\\" (7/7)\",\"unit\":\"nanoseconds\",\"startValue\":0,"
            "\"endValue\":2000,\"samples\":[[0,1]],\"weights\":[2000]},"
            "{\"type\":\"sampled\",\"name\":\"x (7/8)\",\"unit\":\"nanoseconds\",\"startValue\":0,\"endValue\":1000,"
            "\"samples\":[[0,2]],\"weights\":[1000]}]}\n");
}

TEST(Speedscope, TimeLineInSampleOrderAndCountEvents) {
  analysis::Profile p = tiny();
  p.events = {{"cycles", "count"}};
  p.samples = {{10, 0, 0, 1, 700}, {20, 0, 0, analysis::kNoIndex, 600}, {30, 1, 0, 2, 1000}, {40, 0, 0, 0, 500}};
  const std::string json = encode_speedscope(p, "a");
  EXPECT_NE(json.find("{\"type\":\"sampled\",\"name\":\"x \\\"quoted\\\" (7/7)\",\"unit\":\"none\",\"startValue\":0,"
                      "\"endValue\":1800,\"samples\":[[0,1],[],[0]],\"weights\":[700,600,500]}"),
            std::string::npos)
      << json;
}

TEST(Speedscope, FramesMergeByNameFileAndLine) {
  analysis::Profile p = test::hand_built_profile();
  // A second address in main(): the same speedscope frame.
  analysis::ProfileFrame main2 = p.frames[0];
  main2.address += 8;
  p.frames.push_back(main2);
  p.stacks.push_back({0, 7, 1});
  p.counts = {{0, 0, 7, 1, 250000}, {0, 0, 2, 1, 250000}};
  p.samples.clear();
  const std::string json = encode_speedscope(p, "f");
  // In the order of the profile's frames; the two frames without symbol stay apart by their DSO.
  EXPECT_NE(json.find("\"shared\":{\"frames\":[{\"name\":\"main\",\"file\":\"main.c\"},"
                      "{\"name\":\"ns::Worker::run(int) const\",\"file\":\"worker.cc\"},"
                      "{\"name\":\"inlined_helper\",\"file\":\"helper.h\",\"line\":7},"
                      "{\"name\":\"[unknown]\",\"file\":\"/usr/lib/x86_64-linux-gnu/libc.so.6\"},"
                      "{\"name\":\"native_safe_halt\",\"file\":\"[kernel.kallsyms]\"},{\"name\":\"[unknown]\"},"
                      "{\"name\":\"__libc_start_call_main\",\"file\":\"/usr/lib/x86_64-linux-gnu/libc.so.6\"}]}"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"samples\":[[6,0],[6,0,1]],\"weights\":[250000,250000]}"), std::string::npos) << json;
}

}  // namespace
}  // namespace tperf::output
