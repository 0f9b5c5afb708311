// Whole-command tests over the shared corpus of real perf.data files: record counts equal
// perf 6.1's `perf report -D`, files perf 6.1 refuses are read and, after `tperf convert`, read
// by perf with the same counts, and every damaged file ends with a one-line error naming an offset.
#include <gtest/gtest.h>

#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace tperf {
namespace {

using test::corpus_dir;
using test::run_command;
using test::shell_quote;

std::vector<std::string> list_files(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      out.push_back(dir + "/" + e->d_name);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// "Aggregated stats:" block of `perf report -D` / `tperf stats`: "NAME events: N" lines.
std::map<std::string, long> aggregated_counts(const std::string& text) {
  std::map<std::string, long> counts;
  std::istringstream in(text);
  std::string line;
  bool on = false;
  static const std::regex kLine(R"(^\s*(\S+) events:\s*(\d+))");
  while (std::getline(in, line)) {
    if (line.rfind("Aggregated stats", 0) == 0) {
      on = true;
      continue;
    }
    if (!on) continue;
    std::smatch m;
    if (std::regex_search(line, m, kLine)) {
      counts[m[1]] = std::stol(m[2]);
    } else if (!line.empty() && line[0] != ' ') {
      break;
    }
  }
  return counts;
}

std::string tperf() { return TPERF_BINARY; }

bool have_perf() {
  static const bool ok = test::have_program("perf");
  return ok;
}

std::string make_temp_dir() {
  char tmpl[] = "/tmp/tperf-corpus-XXXXXX";
  const char* d = mkdtemp(tmpl);
  return d ? d : "/tmp";
}

class CorpusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    struct stat st;
    ASSERT_EQ(stat(corpus_dir().c_str(), &st), 0) << "set-up failed: no corpus at " << corpus_dir();
    ASSERT_TRUE(have_perf()) << "set-up failed: perf is not in PATH (scripts/setup.sh installs it)";
  }
};

TEST_F(CorpusTest, RecordCountsEqualPerfReportDump) {
  for (const auto& rel : test::corpus_files_perf_reads()) {
    SCOPED_TRACE(rel);
    std::string path = corpus_dir() + "/" + rel;
    int perf_status = 0, tperf_status = 0;
    auto perf = aggregated_counts(run_command("perf report -D -i " + shell_quote(path) + " 2>/dev/null", &perf_status));
    auto ours = aggregated_counts(run_command(tperf() + " stats " + shell_quote(path), &tperf_status));
    ASSERT_FALSE(perf.empty()) << "perf printed no stats";
    EXPECT_EQ(tperf_status, 0);
    EXPECT_EQ(ours, perf);
  }
}

TEST_F(CorpusTest, FilesPerfRefusesAreReadAndConvertedForPerf) {
  std::string tmp = make_temp_dir();
  for (const auto& rel : test::corpus_files_perf_refuses()) {
    SCOPED_TRACE(rel);
    std::string path = corpus_dir() + "/" + rel;
    int status = 0;
    auto ours = aggregated_counts(run_command(tperf() + " stats " + shell_quote(path) + " 2>/dev/null", &status));
    EXPECT_EQ(status, 0);
    ASSERT_GT(ours["SAMPLE"], 0);
    // perf 6.1 cannot read it as it is...
    auto before = aggregated_counts(run_command("perf report -D -i " + shell_quote(path) + " 2>/dev/null"));
    EXPECT_TRUE(before.empty());
    // ...but reads the converted file, and counts what we count.
    std::string out = tmp + "/converted.data";
    run_command(tperf() + " convert " + shell_quote(path) + " " + out + " 2>&1", &status);
    ASSERT_EQ(status, 0);
    std::string err = run_command("perf report -D -i " + out + " 2>&1 >/dev/null");
    EXPECT_EQ(err.find("Warning"), std::string::npos) << err;
    EXPECT_EQ(err.find("failed"), std::string::npos) << err;
    auto perf = aggregated_counts(run_command("perf report -D -i " + out + " 2>/dev/null"));
    ASSERT_FALSE(perf.empty());
    // Records that only carry headers or compressed bytes go into the file header instead.
    for (const char* gone : {"ATTR", "FEATURE", "EVENT_UPDATE", "COMPRESSED", "COMPRESSED2", "TRACING_DATA", "TOTAL"}) {
      ours.erase(gone);
      perf.erase(gone);
    }
    EXPECT_EQ(perf, ours);
    unlink(out.c_str());
  }
  rmdir(tmp.c_str());
}

// A recording cut short (perf killed, disk full) is refused by perf; tperf reads what is there,
// says where the damage is, and convert salvages it into a file perf reads.
TEST_F(CorpusTest, CutFileIsReportedAndSalvagedByConvert) {
  test::TempDir tmp;
  std::string cut = tmp.file("cut.data"), salvaged = tmp.file("salvaged.data");
  run_command("head -c 300000 " + shell_quote(corpus_dir() + "/quipper/testdata/perf.data.callgraph-3.8") + " > " +
              cut);
  int status = 0;
  std::string out = run_command(tperf() + " stats " + cut + " 2>&1", &status);
  EXPECT_EQ(status, 2);
  EXPECT_NE(out.find("offset 0x493e0: file truncated"), std::string::npos) << out;
  auto ours = aggregated_counts(out);
  ASSERT_GT(ours["SAMPLE"], 100);
  std::string err = run_command(tperf() + " convert " + cut + " " + salvaged + " 2>&1", &status);
  EXPECT_EQ(status, 2);
  EXPECT_NE(err.find("wrote the records before the damage"), std::string::npos) << err;
  auto perf = aggregated_counts(run_command("perf report -D -i " + salvaged + " 2>/dev/null"));
  ours.erase("TOTAL");
  perf.erase("TOTAL");
  EXPECT_EQ(perf, ours);
}

TEST_F(CorpusTest, TextAfterThePipeStreamIsIgnoredWithAWarning) {
  // This file has perf record's own messages appended after the last record.
  std::string path = corpus_dir() + "/linux-perf-data/sleep.compressed2.pipe.data";
  int status = 0;
  std::string err = run_command(tperf() + " stats " + shell_quote(path) + " 2>&1 >/dev/null", &status);
  EXPECT_EQ(status, 0);
  EXPECT_NE(err.find("warning: ignored 143 bytes of text after the last record at offset 0x7c40"), std::string::npos)
      << err;
}

TEST_F(CorpusTest, DamagedFilesEndWithOneLineErrorNamingTheOffset) {
  std::vector<std::string> files = list_files(corpus_dir() + "/quipper/fuzz-crashers");
  files.push_back(corpus_dir() + "/quipper/testdata/perf.data.piped.corrupted.zero_size_sample-3.2");
  ASSERT_GE(files.size(), 29u);
  static const std::regex kError(R"(^tperf (stats|dump|header): .+: offset 0x[0-9a-f]+: .+$)");
  for (const auto& f : files) {
    SCOPED_TRACE(f);
    for (const char* cmd : {"stats", "dump"}) {
      int status = 0;
      std::string err = run_command("timeout 20 " + tperf() + " " + cmd + " " + shell_quote(f) + " 2>&1 >/dev/null",
                                    &status);
      EXPECT_EQ(status, 2) << err;
      // The last line names the offset and what was wrong.
      std::string last = err;
      while (!last.empty() && last.back() == '\n') last.pop_back();
      last = last.substr(last.rfind('\n') == std::string::npos ? 0 : last.rfind('\n') + 1);
      EXPECT_TRUE(std::regex_match(last, kError)) << err;
    }
  }
}

TEST_F(CorpusTest, ZeroSizeSampleInPipeFileIsReportedAtItsOffset) {
  std::string path = corpus_dir() + "/quipper/testdata/perf.data.piped.corrupted.zero_size_sample-3.2";
  int status = 0;
  std::string out = run_command(tperf() + " stats " + shell_quote(path) + " 2>&1", &status);
  EXPECT_EQ(status, 2);
  // perf stops at the same record ("bad event header size"). Its -D offsets in pipe mode count
  // from the end of the 16-byte pipe header; the bad record follows its last good one.
  if (have_perf()) {
    std::string perf_err = run_command("perf report -D -i " + shell_quote(path) + " 2>&1 >/dev/null");
    EXPECT_NE(perf_err.find("bad event header size"), std::string::npos) << perf_err;
    std::string perf = run_command("perf report -D -i " + shell_quote(path) + " 2>/dev/null");
    static const std::regex kRec(R"(\n(?:\d+ )+(0x[0-9a-f]+) \[(0x[0-9a-f]+)\]: PERF_RECORD_)");
    unsigned long last_off = 0, last_size = 0;
    for (std::sregex_iterator it(perf.begin(), perf.end(), kRec), end; it != end; ++it) {
      last_off = std::stoul((*it)[1].str(), nullptr, 16);
      last_size = std::stoul((*it)[2].str(), nullptr, 16);
    }
    ASSERT_GT(last_size, 0u);
    char expect[64];
    snprintf(expect, sizeof expect, "offset 0x%lx: record of type 9 (SAMPLE) has size 0", last_off + 16 + last_size);
    EXPECT_NE(out.find(expect), std::string::npos) << out << "\nexpected: " << expect;
  }
}

}  // namespace
}  // namespace tperf
