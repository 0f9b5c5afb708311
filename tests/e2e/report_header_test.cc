// `tperf report --header`, `--header-only` and `-I` against `perf report` (perf 6.1) with the same
// options: the header block in place of the hint line before the report, the header alone, the
// features a pipe-mode file carries as records (which perf prints while it reads them, even
// under -q, but not before a task list), and how -q, --tasks and --mmaps change each. Inputs: a
// fresh recording (file mode, callchains, two threads), a pipe-mode file of the corpus, and that
// file on standard input (read twice by tperf: once for the header, once for the report).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "e2e/recording_util.h"
#include "test_util.h"

namespace tperf {
namespace {

namespace fs = std::filesystem;
using test::shell_quote;
using test::e2e::CommandResult;
using test::e2e::run;

using test::e2e::kStripPerfTip;

// The options perf's header printing depends on, and the report modes they meet.
const std::vector<std::string> kHeaderOptions = {"--header",    "--header-only",    "-I",
                                                 "--header -I", "--header-only -I", "--header --header-only"};
const std::vector<std::string> kModes = {"", "--no-children", "--tasks", "--mmaps"};

// `stdin`: the input goes to both tools on standard input (-i -).
void expect_same_as_perf(const std::string& input, const std::string& args, bool stdin, size_t* compared) {
  const std::string in = stdin ? "-i - < " + shell_quote(input) : "-i " + shell_quote(input);
  test::e2e::ComparedOutputs c = test::e2e::compare_outputs(
      fmt::format("perf report --stdio {} {} 2>/dev/null | {}", args, in, kStripPerfTip),
      fmt::format("{} report --stdio --no-unwind-summary {} {}", TPERF_BINARY, args, in), input);
  test::e2e::expect_same_outputs(c, "perf report " + args + (stdin ? " (standard input)" : "") + " vs tperf", 3);
  ++*compared;
}

void expect_matrix_same_as_perf(const std::string& input, bool stdin) {
  size_t compared = 0;
  for (const std::string& mode : kModes) {
    for (const std::string& header : kHeaderOptions) {
      for (const char* quiet : {"", " -q"}) expect_same_as_perf(input, mode + " " + header + quiet, stdin, &compared);
    }
  }
  EXPECT_EQ(compared, kModes.size() * kHeaderOptions.size() * 2);
}

const test::e2e::Recording& threads_recording() {
  static const test::e2e::Recording r = [] {
    std::string error;
    const std::string spin = test::e2e::workload("spin", &error);
    if (spin.empty()) return test::e2e::Recording{"", "cannot build the workload: " + error};
    const std::string path = test::e2e::scratch_dir() + "/report-header.data";
    return test::e2e::record_with_perf(
        fmt::format("timeout 60 perf record -q -e cpu-clock -g -o {} -- {} 0.1", shell_quote(path), shell_quote(spin)),
        path);
  }();
  return r;
}

std::string pipe_file() {
  return test::corpus_dir() + "/quipper/testdata/perf.data.piped.header_feautres_group_desc-6.8";
}

TEST(ReportHeader, FileRecordingEqualsPerf) {
  TPERF_REQUIRE_RECORDING(rec, threads_recording());
  expect_matrix_same_as_perf(rec.path, false);
}

TEST(ReportHeader, PipeModeFileEqualsPerf) {
  TPERF_REQUIRE_PERF();
  ASSERT_TRUE(fs::exists(pipe_file())) << "set-up failed: corpus file missing: " << pipe_file();
  expect_matrix_same_as_perf(pipe_file(), false);
}

TEST(ReportHeader, PipeOnStandardInputEqualsPerf) {
  TPERF_REQUIRE_PERF();
  ASSERT_TRUE(fs::exists(pipe_file())) << "set-up failed: corpus file missing: " << pipe_file();
  size_t compared = 0;
  for (const std::string& header : kHeaderOptions) {
    for (const char* quiet : {"", " -q"}) expect_same_as_perf(pipe_file(), header + quiet, true, &compared);
  }
  EXPECT_EQ(compared, kHeaderOptions.size() * 2);
}

// --header puts the header where the hint line was; --header-only prints the header alone: the
// same lines as `tperf header --no-extras`, and no report after them.
TEST(ReportHeader, HeaderOnlyIsTheHeaderCommandsBlock) {
  TPERF_REQUIRE_RECORDING(rec, threads_recording());
  const std::string path = shell_quote(rec.path);
  CommandResult header = run(fmt::format("{} header --no-extras {}", TPERF_BINARY, path));
  CommandResult only = run(fmt::format("{} report --header-only -i {}", TPERF_BINARY, path));
  CommandResult with = run(fmt::format("{} report --header --no-unwind-summary -i {}", TPERF_BINARY, path));
  CommandResult plain = run(fmt::format("{} report --no-unwind-summary -i {}", TPERF_BINARY, path));
  ASSERT_EQ(header.status, 0) << header.err;
  ASSERT_EQ(only.status, 0) << only.err;
  ASSERT_EQ(with.status, 0) << with.err;
  ASSERT_EQ(plain.status, 0) << plain.err;
  EXPECT_EQ(only.out, header.out);
  EXPECT_EQ(only.out.find("Total Lost Samples"), std::string::npos);
  const std::string hint = "# To display the perf.data header info, please use --header/--header-only options.\n#\n";
  ASSERT_EQ(plain.out.rfind(hint, 0), 0u) << "the report starts with perf's hint line";
  EXPECT_EQ(with.out, header.out + plain.out.substr(hint.size()));
}

// A damaged file: --header-only says what is wrong and where, with exit status 2, as the header
// command does; a file that is not perf.data at all is refused before anything is printed.
TEST(ReportHeader, UnreadableInputsAreNamed) {
  const std::string dir = test::e2e::scratch_dir();
  const std::string junk = dir + "/report-header-junk.data";
  ASSERT_EQ(run(fmt::format("head -c 4096 /dev/urandom > {}", shell_quote(junk))).status, 0);
  for (const char* opt : {"--header-only", "--header"}) {
    CommandResult r = run(fmt::format("{} report {} -i {}", TPERF_BINARY, opt, shell_quote(junk)));
    EXPECT_EQ(r.status, 2) << opt;
    EXPECT_NE(r.err.find(junk), std::string::npos) << opt << ": " << r.err;
    EXPECT_EQ(r.out, "") << opt;
  }
}

}  // namespace
}  // namespace tperf
