// pprof files of the hand-built stack table (tests/output/profile_fixture.h), read back by two
// decoders that share nothing with tperf's encoder: protoc with our own profile.proto
// (tests/data/profile.proto, from pprof's published field numbers) and the npm pprof-format
// package (tests/js/pprof_summary.js). Expected values are worked out by hand from the fixture.
#include "output/pprof.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <fstream>

#include "output/profile_fixture.h"
#include "test_util.h"

namespace tperf::output {
namespace {

std::string write(const test::TempDir& dir, const std::string& name, const std::string& bytes) {
  std::string path = dir.file(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string source(const std::string& rel) { return std::string(TPERF_SOURCE_DIR) + "/" + rel; }

// "captured on" is local time: the tests read it in UTC.
struct UtcZone {
  UtcZone() {
    setenv("TZ", "UTC", 1);
    tzset();
  }
};

TEST(Pprof, ProtocDecodesLocationsSamplesAndLabels) {
  TPERF_REQUIRE_PROGRAM("protoc");
  UtcZone utc;
  test::TempDir dir;
  const std::string gz = write(dir, "p.pb.gz", gzip_compress(encode_pprof(test::hand_built_profile())));
  int status = -1;
  const std::string text = test::run_command("gzip -dc " + test::shell_quote(gz) + " | protoc --decode=perftools.profiles.Profile -I " +
                                                 test::shell_quote(source("tests/data")) + " profile.proto 2>&1",
                                             &status);
  ASSERT_EQ(status, 0) << text;
  // Samples and locations are numbered as first met (the profile's counts in order), locations
  // leaf first; location 2 is run() with inlined_helper (line 7) inlined into it, the callee
  // first, location 5 run() alone.
  EXPECT_NE(text.find("sample {\n"
                      "  location_id: 1\n"
                      "  location_id: 2\n"
                      "  location_id: 3\n"
                      "  location_id: 4\n"
                      "  value: 3\n"
                      "  value: 750000\n"
                      "  label {\n"
                      "    key: 5\n"
                      "    num: 100\n"
                      "  }\n"
                      "  label {\n"
                      "    key: 6\n"
                      "    num: 100\n"
                      "  }\n"
                      "  label {\n"
                      "    key: 7\n"
                      "    str: 8\n"
                      "  }\n"
                      "}\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("location {\n"
                      "  id: 2\n"
                      "  mapping_id: 1\n"
                      "  address: 4198912\n"
                      "  line {\n"
                      "    function_id: 4\n"
                      "    line: 7\n"
                      "  }\n"
                      "  line {\n"
                      "    function_id: 2\n"
                      "  }\n"
                      "}\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("location {\n"
                      "  id: 5\n"
                      "  mapping_id: 1\n"
                      "  address: 4198912\n"
                      "  line {\n"
                      "    function_id: 2\n"
                      "  }\n"
                      "}\n"),
            std::string::npos)
      << text;
  // The frame outside any map: no mapping_id.
  EXPECT_NE(text.find("location {\n"
                      "  id: 7\n"
                      "  address: 4660\n"
                      "  line {\n"
                      "    function_id: 3\n"
                      "  }\n"
                      "}\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("mapping {\n"
                      "  id: 3\n"
                      "  memory_start: 18446744071578845184\n"
                      "  memory_limit: 18446744071595622400\n"
                      "  filename: "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("string_table: \"\"\nstring_table: \"samples\"\nstring_table: \"count\"\n"
                      "string_table: \"cpu-clock\"\nstring_table: \"nanoseconds\"\nstring_table: \"pid\"\n"
                      "string_table: \"tid\"\nstring_table: \"comm\"\nstring_table: \"app\"\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("time_nanos: 1795551759000000000\nduration_nanos: 3000000\nperiod_type {\n  type: 3\n  unit: 4\n}\n"
                      "period: 250000\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("default_sample_type: 3\n"), std::string::npos) << text;
}

TEST(Pprof, PprofFormatPackageReadsTheSameProfile) {
  TPERF_REQUIRE_PROGRAM("node");
  UtcZone utc;
  test::TempDir dir;
  const std::string gz = write(dir, "p.pb.gz", gzip_compress(encode_pprof(test::hand_built_profile())));
  int status = -1;
  const std::string text =
      test::run_command("node " + test::shell_quote(source("tests/js/pprof_summary.js")) + " " + test::shell_quote(gz) + " 2>&1", &status);
  ASSERT_EQ(status, 0) << text;
  EXPECT_EQ(text,
            "sample_type samples/count cpu-clock/nanoseconds\n"
            "default_sample_type cpu-clock\n"
            "period_type cpu-clock/nanoseconds 250000\n"
            "time_nanos 1795551759000000000 duration_nanos 3000000\n"
            "mapping /usr/bin/app 0123456789abcdef0123456789abcdef01234567 4194304 4198400 0\n"
            "mapping /usr/lib/x86_64-linux-gnu/libc.so.6 aabbccdd 139637976727552 139637977776128 4096\n"
            "mapping [kernel.kallsyms] - 18446744071578845184 18446744071595622400 0\n"
            "stack pid=0,tid=0,comm=swapper native_safe_halt 5 1250000\n"
            "stack pid=100,tid=100,comm=app  1 250000\n"
            "stack pid=100,tid=100,comm=app __libc_start_call_main;main;ns::Worker::run(int) const 1 250000\n"
            "stack pid=100,tid=100,comm=app __libc_start_call_main;main;ns::Worker::run(int) "
            "const;inlined_helper:7;[unknown] 3 750000\n"
            "stack pid=100,tid=101,comm=app worker __libc_start_call_main;main;[unknown] 1 250000\n"
            "stack pid=100,tid=101,comm=app worker __libc_start_call_main;main;ns::Worker::run(int) "
            "const;inlined_helper:7 2 500000\n"
            "self - 1 250000\n"
            "self [unknown] 4 1000000\n"
            "self native_safe_halt 5 1250000\n"
            "self ns::Worker::run(int) const 3 750000\n");
}

TEST(Pprof, SeveralEventsHaveTwoValuesEach) {
  TPERF_REQUIRE_PROGRAM("node");
  analysis::Profile p = test::hand_built_profile();
  p.events.push_back({"page-faults", "count"});
  p.counts.push_back({0, 1, 2, 4, 4});  // 4 page faults in run(), app's main thread
  test::TempDir dir;
  const std::string gz = write(dir, "p.pb.gz", gzip_compress(encode_pprof(p)));
  int status = -1;
  const std::string text =
      test::run_command("node " + test::shell_quote(source("tests/js/pprof_summary.js")) + " " + test::shell_quote(gz) + " 2>&1", &status);
  ASSERT_EQ(status, 0) << text;
  EXPECT_NE(text.find("sample_type cpu-clock_samples/count cpu-clock/nanoseconds page-faults_samples/count "
                      "page-faults/count\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("stack pid=100,tid=100,comm=app __libc_start_call_main;main;ns::Worker::run(int) const 1 250000 4 4\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("stack pid=0,tid=0,comm=swapper native_safe_halt 5 1250000 0 0\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace tperf::output
