// `tperf dump` prints, for the records perf -D describes the same way, perf's own line: the
// "[cpu ]time offset [size]: PERF_RECORD_..." text of `perf report -D` (perf 6.1), byte for byte.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <string>

#include "test_util.h"

namespace tperf {
namespace {

using test::corpus_dir;
using test::run_command;
using test::shell_quote;

// offset -> line, for MMAP/MMAP2/COMM/FORK/EXIT/SAMPLE lines; tperf's extras after "  #" cut.
std::map<std::string, std::string> record_lines(const std::string& text) {
  static const std::regex kLine(R"((?:^|\n)((?:\S+ )*(0x[0-9a-f]+) \[0x[0-9a-f]+\]: PERF_RECORD_(?:MMAP2?|COMM|FORK|EXIT|SAMPLE)\b[^\n]*))");
  std::map<std::string, std::string> out;
  for (std::sregex_iterator it(text.begin(), text.end(), kLine), end; it != end; ++it) {
    std::string line = (*it)[1];
    auto extras = line.find("  #");
    if (extras != std::string::npos) line.resize(extras);
    out[(*it)[2]] = line;
  }
  return out;
}

TEST(DumpCommand, RecordLinesEqualPerfReportDump) {
  TPERF_REQUIRE_CORPUS();
  TPERF_REQUIRE_PROGRAM("perf");
  // File-mode, uncompressed files: perf's -D offsets are file offsets there.
  for (const char* name : {"perf.data.armv7-3.4", "perf.data.branch-4.14", "perf.data.callgraph-3.8",
                           "perf.data.ctx_switch_namespaces-4.14", "perf.data.forkexit-3.8",
                           "perf.data.group_desc-4.14", "perf.data.hybrid_topology", "perf.data.i686-3.4",
                           "perf.data.intel_pt-4.14", "perf.data.lost_samples-4.4", "perf.data.singleprocess-3.8"}) {
    SCOPED_TRACE(name);
    std::string path = corpus_dir() + "/quipper/testdata/" + name;
    auto perf = record_lines(run_command("perf report -D -i " + shell_quote(path) + " 2>/dev/null"));
    int status = 0;
    auto ours = record_lines(run_command(std::string(TPERF_BINARY) + " dump " + shell_quote(path), &status));
    EXPECT_EQ(status, 0);
    ASSERT_GT(perf.size(), 10u);
    EXPECT_EQ(ours.size(), perf.size());
    size_t shown = 0;
    for (const auto& [offset, line] : perf) {
      auto it = ours.find(offset);
      if (it == ours.end() || it->second != line) {
        if (++shown <= 3) ADD_FAILURE() << "perf:  " << line << "\ntperf: " << (it == ours.end() ? "-" : it->second);
      }
    }
    EXPECT_EQ(shown, 0u);
  }
}

TEST(DumpCommand, CallchainOptionListsEveryEntry) {
  std::string path = corpus_dir() + "/quipper/testdata/perf.data.callgraph-3.8";
  TPERF_REQUIRE_CORPUS();
  TPERF_REQUIRE_PROGRAM("perf");
  // perf -D prints "... FP chain: nr:N" then one ".....  i: ip" line per entry.
  std::string perf = run_command("perf report -D -i " + shell_quote(path) + " 2>/dev/null");
  std::string ours = run_command(std::string(TPERF_BINARY) + " dump --callchain " + shell_quote(path));
  auto chains = [](const std::string& text) {
    static const std::regex kEntry(R"(\n\.\.\.\.\.\s+\d+: ([0-9a-f]{16}))");
    std::multiset<std::string> ips;
    for (std::sregex_iterator it(text.begin(), text.end(), kEntry), end; it != end; ++it) ips.insert((*it)[1]);
    return ips;
  };
  auto p = chains(perf), t = chains(ours);
  EXPECT_GT(p.size(), 1000u);
  EXPECT_TRUE(p == t) << p.size() << " vs " << t.size();
}

}  // namespace
}  // namespace tperf
