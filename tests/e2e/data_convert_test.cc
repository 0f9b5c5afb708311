// `tperf data convert --to-json` against `perf data convert --to-json` (perf 6.1), byte for byte:
// on recordings made here (callchains, system-wide with cpus, tracepoints, DWARF stack copies,
// a clock-data header, a comm that needs escapes, no callchain at all) and on the corpus files
// perf reads. perf 6.1 crashes on a pipe: a pipe's samples are held against perf's on the
// file-mode copy of the same stream. Then what perf refuses (an existing output file, --all,
// --tod), standard output, --time, and a stream damaged in the middle.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <cstring>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "e2e/recording_util.h"
#include "test_util.h"

namespace tperf::test::e2e {
namespace {

namespace fs = std::filesystem;

const std::string kTperf = TPERF_BINARY;

struct Converted {
  CommandResult run;
  std::string json;  // the output file's content
};

// Runs `tool data convert --to-json OUT -i INPUT EXTRA` into a fresh file of the scratch directory.
Converted convert(const std::string& tool, const std::string& input, const std::string& extra = "") {
  static int n = 0;
  const std::string out = fmt::format("{}/convert-{}-{}.json", scratch_dir(), tool == "perf" ? "perf" : "tperf", ++n);
  fs::remove(out);
  Converted c;
  c.run = run(fmt::format("{} data convert --to-json {} -i {} {}", tool, shell_quote(out), shell_quote(input), extra));
  c.json = read_file(out);
  return c;
}

// Both tools' JSON of `input`; expects them equal, tperf's exit status 0 and at least
// `min_samples` samples. Keeps the files of a failed comparison.
void expect_same_json(const std::string& input, size_t min_samples, const std::string& what) {
  SCOPED_TRACE(what + ": " + input);
  const Converted p = convert("perf", input);
  ASSERT_EQ(p.run.status, 0) << "set-up failed: perf data convert: " << p.run.err;
  const Converted t = convert(kTperf, input);
  EXPECT_EQ(t.run.status, 0) << t.run.err;
  size_t samples = 0;
  for (size_t at = 0; (at = p.json.find("\n\t\t\t\"timestamp\": ", at)) != std::string::npos; ++at) ++samples;
  EXPECT_GE(samples, min_samples);
  if (t.json != p.json) {
    const std::string kept = keep_artifacts({input});
    std::ofstream(kept + "/perf.json") << p.json;
    std::ofstream(kept + "/tperf.json") << t.json;
    size_t i = 0;
    while (i < p.json.size() && i < t.json.size() && p.json[i] == t.json[i]) ++i;
    ADD_FAILURE() << "JSON differs at byte " << i << ": perf \"" << p.json.substr(i, 80) << "\" tperf \""
                  << t.json.substr(i, 80) << "\" (kept in " << kept << ")";
  }
  // tperf's closing line, as perf's.
  EXPECT_NE(t.run.err.find(fmt::format("({} samples) ]", samples)), std::string::npos) << t.run.err;
}

TEST(DataConvertJson, CallchainsEqualPerf) {
  TPERF_REQUIRE_RECORDING(rec, workload_recording("json-fp", "spin", "-e cpu-clock -c 100000 -g"));
  expect_same_json(rec.path, 200, "-g");
}

TEST(DataConvertJson, NoCallchainEqualsPerf) {
  TPERF_REQUIRE_RECORDING(rec, workload_recording("json-flat", "spin", "-e cpu-clock -c 100000"));
  expect_same_json(rec.path, 200, "no callchain");
}

TEST(DataConvertJson, SystemWideWithCpusEqualsPerf) {
  // -a samples the cpu: every sample says which.
  TPERF_REQUIRE_RECORDING(rec, workload_recording("json-sys", "spin", "-a -g -e cpu-clock -c 100000"));
  expect_same_json(rec.path, 200, "-a -g");
}

TEST(DataConvertJson, DwarfStackCopiesEqualPerf) {
  // The kernel's callchain only (the user part is in the stack copy, which perf's converter does
  // not unwind): user samples have an empty callchain array.
  TPERF_REQUIRE_RECORDING(rec, workload_recording("json-dwarf", "spin", "-e cpu-clock -c 200000 --call-graph dwarf,4096"));
  expect_same_json(rec.path, 100, "--call-graph dwarf");
}

TEST(DataConvertJson, ClockDataAndTracepointsEqualPerf) {
  TPERF_REQUIRE_PERF();
  ASSERT_EQ(ensure_tracefs(), "") << "set-up failed";
  TPERF_REQUIRE_RECORDING(rec, workload_recording("json-tp", "spin", "-k mono -a -g -e sched:sched_switch -e cpu-clock -F 1000"));
  const std::string header = run(fmt::format("perf report --header-only -i {}", shell_quote(rec.path))).out;
  ASSERT_NE(header.find("clockid"), std::string::npos) << "set-up failed: no clock data in the recording:\n" << header;
  expect_same_json(rec.path, 100, "-k mono, tracepoints");
  const Converted t = convert(kTperf, rec.path);
  EXPECT_NE(t.json.find("\"clock-time\": "), std::string::npos);
}

TEST(DataConvertJson, CommNeedingEscapesEqualsPerf) {
  // A program named with a quote, a backslash and a tab: its comm is that name.
  TPERF_REQUIRE_PERF();
  std::string error;
  const std::string spin = workload("spin", &error);
  ASSERT_FALSE(spin.empty()) << "set-up failed: " << error;
  const std::string odd = scratch_dir() + "/q\"b\\s\tx";
  fs::copy_file(spin, odd, fs::copy_options::overwrite_existing);
  fs::permissions(odd, fs::perms::owner_all);
  const std::string path = scratch_dir() + "/json-escapes.data";
  const Recording rec = record_with_perf(
      fmt::format("timeout 60 perf record -q -e cpu-clock -c 100000 -g -o {} -- {} 0.2", shell_quote(path), shell_quote(odd)),
      path);
  ASSERT_TRUE(rec.error.empty()) << "set-up failed: " << rec.error;
  expect_same_json(rec.path, 100, "escapes");
  EXPECT_NE(convert(kTperf, rec.path).json.find(R"("comm": "q\"b\\s\tx")"), std::string::npos);
}

TEST(DataConvertJson, Utf8CommStaysText) {
  // perf writes each byte of 0x80 and up as "\uffffffXX" (a signed char printed as hex), which
  // is not the byte; tperf keeps valid UTF-8 as it is (the one place its output differs).
  TPERF_REQUIRE_PERF();
  std::string error;
  const std::string spin = workload("spin", &error);
  ASSERT_FALSE(spin.empty()) << "set-up failed: " << error;
  const std::string name = "h\xc3\xa9llo";
  const std::string odd = scratch_dir() + "/" + name;
  fs::copy_file(spin, odd, fs::copy_options::overwrite_existing);
  fs::permissions(odd, fs::perms::owner_all);
  const std::string path = scratch_dir() + "/json-utf8.data";
  const Recording rec = record_with_perf(
      fmt::format("timeout 60 perf record -q -e cpu-clock -c 100000 -o {} -- {} 0.2", shell_quote(path), shell_quote(odd)),
      path);
  ASSERT_TRUE(rec.error.empty()) << "set-up failed: " << rec.error;
  const Converted p = convert("perf", rec.path);
  ASSERT_EQ(p.run.status, 0) << p.run.err;
  EXPECT_NE(p.json.find(R"("comm": "h\uffffffc3\uffffffa9llo")"), std::string::npos) << "perf's escaping changed?";
  const Converted t = convert(kTperf, rec.path);
  EXPECT_EQ(t.run.status, 0) << t.run.err;
  EXPECT_NE(t.json.find("\"comm\": \"" + name + "\""), std::string::npos);
  // Everything else is perf's.
  std::string perf_as_text = p.json, from = R"(h\uffffffc3\uffffffa9llo)";
  for (size_t at; (at = perf_as_text.find(from)) != std::string::npos;) perf_as_text.replace(at, from.size(), name);
  EXPECT_EQ(t.json, perf_as_text);
}

TEST(DataConvertJson, CorpusFilesEqualPerf) {
  TPERF_REQUIRE_PERF();
  TPERF_REQUIRE_CORPUS();
  size_t compared = 0;
  for (const std::string& rel : corpus_files_perf_reads()) {
    const std::string path = corpus_dir() + "/" + rel;
    SCOPED_TRACE(rel);
    // perf 6.1's converter crashes on pipes and on AUX data: those are held apart below.
    if (rel.find("piped") != std::string::npos || rel.find(".pipe.") != std::string::npos ||
        rel.find("intel_pt") != std::string::npos) {
      continue;
    }
    const Converted p = convert("perf", path);
    ASSERT_EQ(p.run.status, 0) << "set-up failed: " << p.run.err;
    const Converted t = convert(kTperf, path);
    EXPECT_EQ(t.run.status, 0) << t.run.err;
    std::string expected = p.json;
    // A file without the CPUID feature: perf writes the cpuid of the machine it runs on, which
    // says nothing of the recording; tperf writes "".
    const bool has_cpuid = run(fmt::format("perf report --header-only -i {}", shell_quote(path))).out.find("# cpuid :") !=
                           std::string::npos;
    if (!has_cpuid) {
      expected = std::regex_replace(expected, std::regex(R"("cpuid": "[^"]*")"), R"("cpuid": "")");
    }
    EXPECT_EQ(t.json, expected);
    ++compared;
  }
  EXPECT_GE(compared, 9u);
}

// The text from the "samples" key on.
std::string samples_part(const std::string& json) {
  const size_t at = json.find("\"samples\": [");
  return at == std::string::npos ? std::string() : json.substr(at);
}

TEST(DataConvertJson, PipeSamplesEqualPerfOnTheFileModeCopy) {
  TPERF_REQUIRE_PERF();
  TPERF_REQUIRE_CORPUS();
  TPERF_REQUIRE_RECORDING(rec, workload_recording("json-fp", "spin", "-e cpu-clock -c 100000 -g"));
  std::vector<std::string> pipes = {scratch_dir() + "/json-fp.pipe.data"};
  ASSERT_EQ(run(fmt::format("{} convert --pipe {} {}", kTperf, shell_quote(rec.path), shell_quote(pipes[0]))).status, 0);
  for (const std::string& rel : corpus_files_perf_reads()) {
    if (rel.find("piped") != std::string::npos || rel.find(".pipe.") != std::string::npos) pipes.push_back(corpus_dir() + "/" + rel);
  }
  size_t compared = 0;
  for (const std::string& pipe : pipes) {
    SCOPED_TRACE(pipe);
    const std::string copy = scratch_dir() + "/" + fs::path(pipe).filename().string() + ".file.data";
    ASSERT_EQ(run(fmt::format("{} convert {} {}", kTperf, shell_quote(pipe), shell_quote(copy))).status, 0);
    const Converted p = convert("perf", copy);
    // perf 6.1 crashes on some of the copies too (perf.data.piped.target-3.8: no features).
    if (p.run.status != 0) continue;
    ++compared;
    for (const bool from_stdin : {false, true}) {
      Converted t;
      if (from_stdin) {
        // No -i and a pipe on standard input: that pipe, as perf takes it.
        const std::string out = scratch_dir() + "/stdin.json";
        fs::remove(out);
        t.run = run(fmt::format("cat {} | {} data convert --to-json {}", shell_quote(pipe), kTperf, shell_quote(out)));
        t.json = read_file(out);
      } else {
        t = convert(kTperf, pipe);
      }
      EXPECT_EQ(t.run.status, 0) << t.run.err;
      EXPECT_EQ(samples_part(t.json), samples_part(p.json)) << (from_stdin ? "standard input" : "-i");
      // The headers come from the stream's feature records (perf 6.1 crashes; later perf writes them empty).
      const std::string hostname = p.json.substr(p.json.find("\"hostname\": "), 30);
      EXPECT_NE(t.json.find(hostname.substr(0, hostname.find('\n'))), std::string::npos);
      EXPECT_NE(t.json.find("\"data-offset\": 0,"), std::string::npos);
    }
  }
  EXPECT_GE(compared, 3u);
}

TEST(DataConvertJson, RefusalsAsPerfAndStandardOutput) {
  TPERF_REQUIRE_RECORDING(rec, workload_recording("json-flat", "spin", "-e cpu-clock -c 100000"));
  const std::string out = scratch_dir() + "/exists.json";
  std::ofstream(out) << "keep me";
  // An existing file is kept unless --force (perf: "Output file exists. Use --force ...").
  CommandResult r = run(fmt::format("{} data convert --to-json {} -i {}", kTperf, shell_quote(out), shell_quote(rec.path)));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("exists.json: the output file exists; --force overwrites it"), std::string::npos) << r.err;
  EXPECT_EQ(read_file(out), "keep me");
  r = run(fmt::format("{} data convert -f --to-json {} -i {}", kTperf, shell_quote(out), shell_quote(rec.path)));
  EXPECT_EQ(r.status, 0) << r.err;
  const Converted p = convert("perf", rec.path);
  ASSERT_EQ(p.run.status, 0) << p.run.err;
  EXPECT_EQ(read_file(out), p.json);
  // --all and --tod are refused for JSON by perf too, before any file is made.
  for (const char* option : {"--all", "--tod"}) {
    const std::string none = scratch_dir() + "/none.json";
    CommandResult c = run(fmt::format("{} data convert --to-json {} {} -i {}", kTperf, shell_quote(none), option, shell_quote(rec.path)));
    EXPECT_EQ(c.status, 2) << option;
    EXPECT_NE(c.err.find(std::string(option) + " is not supported for JSON output"), std::string::npos) << c.err;
    EXPECT_FALSE(fs::exists(none)) << option;
    CommandResult q = run(fmt::format("perf data convert --to-json {} {} -i {}", shell_quote(none), option, shell_quote(rec.path)));
    EXPECT_NE(q.status, 0) << "perf took " << option;
  }
  r = run(fmt::format("{} data convert --to-ctf {} -i {}", kTperf, shell_quote(scratch_dir() + "/ctf"), shell_quote(rec.path)));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--to-ctf: CTF output is not supported"), std::string::npos) << r.err;
  r = run(fmt::format("{} data convert -i {}", kTperf, shell_quote(rec.path)));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("give --to-json FILE"), std::string::npos) << r.err;
  // "-": standard output, the same document.
  r = run(fmt::format("{} data convert --to-json - -i {}", kTperf, shell_quote(rec.path)));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, p.json);
}

TEST(DataConvertJson, TimeRangesKeepTheSamplesPerfKeepsInThem) {
  // perf 6.1's converter has no --time (later ones have): the expected samples are perf's own
  // JSON with the samples outside the range taken out here.
  TPERF_REQUIRE_RECORDING(rec, workload_recording("json-fp", "spin", "-e cpu-clock -c 100000 -g"));
  const Converted p = convert("perf", rec.path);
  ASSERT_EQ(p.run.status, 0) << p.run.err;
  // The samples as perf wrote them, one text each, with their times.
  std::vector<std::pair<uint64_t, std::string>> samples;
  const std::string head = "\n\t\t{\n\t\t\t\"timestamp\": ";
  for (size_t at = p.json.find(head); at != std::string::npos;) {
    const size_t next = p.json.find(head, at + 1);
    const size_t end = next == std::string::npos ? p.json.rfind("\n\t]") : next - 1;  // before the comma
    samples.emplace_back(std::stoull(p.json.substr(at + head.size(), 20)), p.json.substr(at, end - at));
    at = next;
  }
  ASSERT_GE(samples.size(), 100u);
  const uint64_t from = samples[samples.size() / 4].first, to = samples[samples.size() / 2].first;
  std::string expected;
  size_t kept = 0;
  for (const auto& [time, text] : samples) {
    if (time < from || time > to) continue;
    expected += (kept++ ? "," : "") + text;
  }
  const Converted t = convert(kTperf, rec.path,
                              fmt::format("--time {}.{:09},{}.{:09}", from / 1000000000, from % 1000000000,
                                          to / 1000000000, to % 1000000000));
  EXPECT_EQ(t.run.status, 0) << t.run.err;
  const std::string tperf_samples = samples_part(t.json);
  EXPECT_EQ(tperf_samples, "\"samples\": [" + expected + "\n\t]\n}\n");
  EXPECT_NE(t.run.err.find(fmt::format("Skipped {} samples", samples.size() - kept)), std::string::npos) << t.run.err;
}

TEST(DataConvertJson, DamagedStreamKeepsWhatCameBefore) {
  // A record of size 0 in the middle of a pipe: nothing after it can be read. The samples
  // before it are written (a valid document), the damage is named with its offset, status 2.
  // Expected: perf's JSON of the same stream cut just before that record (which it reads whole
  // once it is a file).
  TPERF_REQUIRE_RECORDING(rec, workload_recording("json-fp", "spin", "-e cpu-clock -c 100000 -g"));
  const std::string pipe = scratch_dir() + "/damaged-src.pipe.data";
  ASSERT_EQ(run(fmt::format("{} convert --pipe {} {}", kTperf, shell_quote(rec.path), shell_quote(pipe))).status, 0);
  std::string bytes = read_file(pipe);
  // Walk the records (8-byte headers after the 16-byte pipe header) to the 100th sample.
  size_t off = 16, samples = 0;
  while (off + 8 <= bytes.size()) {
    uint32_t type;
    uint16_t size;
    std::memcpy(&type, bytes.data() + off, 4);
    std::memcpy(&size, bytes.data() + off + 6, 2);
    if (type == 9 && ++samples == 100) break;
    ASSERT_GT(size, 0u);
    off += size;
  }
  ASSERT_EQ(samples, 100u) << "set-up failed: the recording has fewer than 100 samples";
  const std::string cut = scratch_dir() + "/damaged-cut.pipe.data";
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, off);
  bytes[off + 6] = bytes[off + 7] = 0;  // the 100th sample's size
  const std::string damaged = scratch_dir() + "/damaged.pipe.data";
  std::ofstream(damaged, std::ios::binary) << bytes;
  const std::string cut_file = scratch_dir() + "/damaged-cut.data";
  ASSERT_EQ(run(fmt::format("{} convert {} {}", kTperf, shell_quote(cut), shell_quote(cut_file))).status, 0);
  const Converted p = convert("perf", cut_file);
  ASSERT_EQ(p.run.status, 0) << p.run.err;
  const Converted t = convert(kTperf, damaged);
  EXPECT_EQ(t.run.status, 2);
  EXPECT_NE(t.run.err.find(fmt::format("offset {:#x}: record of type 9 (SAMPLE) has size 0", off)), std::string::npos)
      << t.run.err;
  EXPECT_EQ(samples_part(t.json), samples_part(p.json));
  // Every reading command keeps the samples before the damage too: script's are perf's of the cut stream.
  CommandResult s = run(fmt::format("{} script -i {}", kTperf, shell_quote(damaged)));
  EXPECT_EQ(s.status, 2);
  EXPECT_EQ(s.out, run(fmt::format("perf script -i {} 2>/dev/null", shell_quote(cut_file))).out);
}

}  // namespace
}  // namespace tperf::test::e2e
