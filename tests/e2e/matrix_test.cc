// Every reading command in its main modes, on every file of ../shared/corpus, in every layout
// the file can be put in: as it is, as a pipe-mode file, on standard input, zstd-compressed (file
// and pipe), and as a `perf record --threads` directory (the layouts are written by
// `tperf convert --pipe / -z / --directory`). Each run must end with exit 0, or exit 2 and a
// message naming the file; never a signal, never a sanitizer report. Where perf 6.1 reads a
// layout, tperf's script and report outputs on it equal perf's on the same bytes; where perf
// cannot, they equal tperf's own on the original layout (the data are the same).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "e2e/recording_util.h"
#include "test_util.h"

namespace tperf {
namespace {

namespace fs = std::filesystem;
using test::corpus_dir;
using test::shell_quote;
using test::e2e::CommandResult;
using test::e2e::run;

std::string tperf() { return TPERF_BINARY; }

// Inputs kept in this repository (fuzz seeds written by tperf's writer for classes the shared
// corpus lacks, such as samples with both branch stacks and callchains) go by this prefix.
constexpr std::string_view kRepoPrefix = "repo/";

// Where a matrix input is.
std::string input_path(const std::string& rel) {
  if (rel.starts_with(kRepoPrefix)) return std::string(TPERF_SOURCE_DIR) + "/" + rel.substr(kRepoPrefix.size());
  return corpus_dir() + "/" + rel;
}

// The files under ../shared/corpus (README files left out), relative to it, then the
// repository's own seed files (fuzz/corpus/*.data) under kRepoPrefix.
std::vector<std::string> corpus_files() {
  std::vector<std::string> files;
  std::error_code ec;
  for (auto it = fs::directory_iterator(std::string(TPERF_SOURCE_DIR) + "/fuzz/corpus", ec);
       !ec && it != fs::directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file() && it->path().extension() == ".data") {
      files.push_back(std::string(kRepoPrefix) + "fuzz/corpus/" + it->path().filename().string());
    }
  }
  if (!fs::is_directory(corpus_dir(), ec)) return files;
  for (auto it = fs::recursive_directory_iterator(corpus_dir(), ec); it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (ec) break;
    if (!it->is_regular_file() || it->path().extension() == ".md") continue;
    files.push_back(fs::relative(it->path(), corpus_dir()).string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Files whose perf output tperf does not reproduce yet, with the reason; they still go through
// every command and layout for the no-crash checks. Each is a class of issue 12.
const std::map<std::string, std::string>& known_differences() {
  static const std::map<std::string, std::string> known = {
      {"quipper/testdata/perf.data.intel_pt-4.14",
       "Intel PT: perf decodes the AUX trace into samples, tperf does not decode AUX data"},
  };
  return known;
}

// perf's lines that are not the report: the header hint, the random tip, lone '#' lines.
std::string normalized(const std::string& text) {
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.empty() || line == "#" || line.rfind("# To display the perf.data header", 0) == 0 ||
        line.rfind("# (Tip:", 0) == 0 || line.rfind("# (Cannot load tips.txt", 0) == 0) {
      continue;
    }
    // perf's "[...]" symbol has an `inlined` flag nobody set (see compare_outputs).
    for (size_t at; (at = line.find("[...] (inlined)")) != std::string::npos;) line.erase(at + 5, 10);
    out += line;
    out += '\n';
  }
  return out;
}

// The first differing lines of two texts, for a failure message.
std::string first_difference(const std::string& want, const std::string& got) {
  std::istringstream a(want), b(got);
  std::string la, lb;
  for (size_t n = 1;; ++n) {
    bool ha = static_cast<bool>(std::getline(a, la));
    bool hb = static_cast<bool>(std::getline(b, lb));
    if (!ha && !hb) return "";
    if (!ha || !hb || la != lb) {
      return fmt::format("line {}:\n  expected: {}\n  tperf:    {}", n, ha ? la : "<end>", hb ? lb : "<end>");
    }
  }
}

struct Layout {
  std::string name;
  std::string path;  // what -i gets; empty for standard input
  std::string feed;  // for standard input: the pipe-mode file that is fed
  bool pipe = false;
};

// A finished run is acceptable when it exited 0, or 2 with a message that names the input; the
// sanitizer builds make any memory or undefined-behaviour error a failure here too.
void expect_clean_end(const CommandResult& r, const std::string& what) {
  EXPECT_TRUE(r.status == 0 || r.status == 2) << what << ": exit status " << r.status << "\n" << r.err.substr(0, 2000);
  for (const char* bad : {"AddressSanitizer", "LeakSanitizer", "runtime error:", "Segmentation fault", "terminate called"}) {
    EXPECT_EQ(r.err.find(bad), std::string::npos) << what << ": " << bad << "\n" << r.err.substr(0, 3000);
  }
  if (r.status == 2) {
    static const std::regex kMessage(R"((^|\n)tperf [a-z]+( [a-z]+)?: .+)");
    EXPECT_TRUE(std::regex_search(r.err, kMessage)) << what << ": exit 2 without a 'tperf CMD: ...' message:\n" << r.err;
  }
}

class Matrix : public ::testing::TestWithParam<std::string> {};

// The commands and their main modes; `{}` is the input option.
const std::vector<std::string>& reading_commands() {
  static const std::vector<std::string> cmds = {
      "dump {}",
      "header {}",
      "stats {}",
      "script {}",
      "script -F comm,pid,tid,cpu,time,event,ip,sym,dso {}",
      // Inline chains of the recorded callchains' frames too (tperf's own), and none at all.
      "script --inline-callchains {}",
      // Source lines looked up and read per thread; with the files' whole paths.
      "script -F comm,tid,ip,sym,srcline,srccode {}",
      "script -F comm,tid,ip,sym,srcline --full-source-path {}",
      "script --deltatime --show-task-events --show-mmap-events {}",
      // The header block first (a pipe-mode file's features after it, as the stream has them).
      "script --header -I {}",
      "report {} --stdio --no-inline",
      "report {} --stdio",
      "report {} --stdio --no-children -g folded -s dso,sym",
      "report {} --stdio -s comm,pid,tid -n",
      "report {} --tasks",
      "report {} --mmaps",
      // The header block (pipe-mode features as they come) before the report, -I's features too.
      "report {} --stdio --header -I",
      "report {} --stats",
      "report {} --stdio --off-cpu",
      // Branch mode's keys, srcline_from/to among them (a file without branch stacks refuses -b).
      "report {} --stdio -b -s comm,dso_from,symbol_to,srcline_from,srcline_to,cycles",
      // Branch stacks (or callchains) as chains keyed by address; a file with neither is refused.
      "report {} --stdio --branch-history",
      // The hierarchy with the cpumode columns (groups side by side too), and the field separator
      // (branch mode is refused by name).
      "report {} --stdio --hierarchy --show-cpu-utilization -n -s dso,pid,sym",
      "report {} --stdio -t , --show-cpu-utilization -n",
      "collapse {}",
      "export --format pprof -o - {}",
      "export --format firefox -o - {}",
      "export --format speedscope -o - {}",
      "data convert --to-json - {}",
  };
  return cmds;
}

// The other layouts hold the same records: the commands whose reading differs by layout.
const std::vector<std::string>& layout_commands() {
  static const std::vector<std::string> cmds = {
      "dump {}",
      "stats {}",
      "script {}",
      "report {} --stdio",
      "report {} --stdio --hierarchy",
      "data convert --to-json - {}",
  };
  return cmds;
}

// The modes compared with perf, as perf's own command lines; tperf runs the same with
// --no-unwind-summary (its quality block is its own).
const std::vector<std::string>& compared_modes() {
  static const std::vector<std::string> modes = {
      "script", "script --reltime --show-task-events", "report --stdio", "report --stdio --no-children",
      // Side-band lines of every kind, and the file order --show-round-events brings.
      "script --show-namespace-events --show-cgroup-events --show-bpf-events --show-lost-events",
      "script --show-round-events --show-switch-events --deltatime",
      // The sample selection (a name, a hex-looking name, an address range) and the chain cut.
      "script -S main,f0,0x1000 --addr-range 4096 --stop-bt main,start_thread",
      "script --dsos '[kernel.kallsyms]' -F comm,tid,ip,sym",
      "report --stdio -g folded",
      // -g's print limit, the address key (srclines beside the frames) and the period value.
      "report --stdio --no-children -g graph,0.5,caller,address,period,3",
      // The srcline key: frames alike by source line, kernel frames and others without one by
      // function.
      "report --stdio -g graph,0.5,callee,srcline",
      // Source lines with the files' whole paths, as addr2line prints them.
      "report --stdio --no-children -s sym,srcline -g caller,srcline --full-source-path",
      "report --stdio -s dso,sym",
      // "symbol" spelled out: perf adds its IPC column.
      "report --stdio --no-children -s dso,symbol",
      "report --stdio --branch-history",
      "report --stdio --header",
      "script --header -I",
      "report --stdio -U",
      "report --stdio --no-branch-stack -t , -n",
  };
  return modes;
}

// ...and the ones compared on the layouts other than the original.
const std::vector<std::string>& compared_layout_modes() {
  static const std::vector<std::string> modes = {"script", "report --stdio"};
  return modes;
}

std::string input_option(const Layout& l) { return l.path.empty() ? "-i -" : "-i " + shell_quote(l.path); }

std::string tperf_command(const Layout& l, const std::string& args) {
  std::string cmd = tperf() + " " + args;
  return l.path.empty() ? "cat " + shell_quote(l.feed) + " | " + cmd : cmd;
}

std::string with_input(std::string pattern, const Layout& l) {
  auto at = pattern.find("{}");
  return pattern.replace(at, 2, input_option(l));
}

// perf 6.1 reads `path` when it ends with status 0, prints something, and says nothing of
// records it failed on or a format it does not know.
bool perf_reads(const CommandResult& r) {
  if (r.status != 0 || r.out.empty()) return false;
  for (const char* refusal : {"failed to process", "incompatible file format", "Error:", "not a perf-generated file",
                              "Can't open", "failed to read"}) {
    if (r.err.find(refusal) != std::string::npos) return false;
  }
  return true;
}

TEST_P(Matrix, EveryCommandInEveryLayout) {
  TPERF_REQUIRE_PERF();
  const std::string rel = GetParam();
  const std::string original = input_path(rel);
  test::TempDir dir;
  const std::string base = dir.path();

  // The original's mode decides which layouts feed standard input.
  CommandResult head = run(tperf() + " header " + shell_quote(original));
  const bool original_is_pipe = head.out.find("# data offset    : 0\n") != std::string::npos &&
                                head.out.find("# header version : 1") != std::string::npos &&
                                head.out.find("# feat offset    : 0\n") != std::string::npos;

  std::vector<Layout> layouts;
  layouts.push_back({"as is", original, "", original_is_pipe});
  if (original_is_pipe) layouts.push_back({"as is, on standard input", "", original, true});
  struct Conversion {
    const char* name;
    const char* options;
    const char* file;
    bool pipe;
  };
  const Conversion conversions[] = {
      {"pipe-mode file", "--pipe", "pipe.data", true},
      {"zstd pipe-mode file", "--pipe -z", "pipe-z.data", true},
      {"zstd file", "-z", "z.data", false},
      {"zstd --threads directory", "--directory 2 -z", "dir-z.data", false},
  };
  size_t converted = 0;
  for (const Conversion& c : conversions) {
    const std::string out = base + "/" + c.file;
    CommandResult r = run(fmt::format("{} convert {} {} {}", tperf(), c.options, shell_quote(original), shell_quote(out)));
    expect_clean_end(r, fmt::format("tperf convert {} {}", c.options, rel));
    // A damaged file converts up to the damage (status 2); what was written is a layout too.
    if (!fs::exists(out)) continue;
    ++converted;
    layouts.push_back({c.name, out, "", c.pipe});
    if (c.pipe && std::string(c.options) == "--pipe") {
      layouts.push_back({std::string(c.name) + " on standard input", "", out, true});
    }
  }

  // 1. Nothing crashes: every command on the original, the layout-dependent ones on every layout,
  // and diff of the file with itself.
  size_t runs = 0;
  for (const Layout& l : layouts) {
    for (const std::string& cmd : &l == &layouts.front() ? reading_commands() : layout_commands()) {
      const std::string args = with_input(cmd, l);
      CommandResult r = run(tperf_command(l, args) + " >/dev/null");
      expect_clean_end(r, fmt::format("{} [{}]: tperf {}", rel, l.name, args));
      ++runs;
    }
    if (&l == &layouts.front()) {
      CommandResult r = run(fmt::format("{} diff {} {} >/dev/null", tperf(), shell_quote(l.path), shell_quote(l.path)));
      expect_clean_end(r, fmt::format("{} [{}]: tperf diff of the file with itself", rel, l.name));
      ++runs;
    }
  }

  // 2. The outputs: perf's where perf reads the layout, else tperf's on the original.
  const bool compare = !known_differences().count(rel);
  size_t compared_with_perf = 0, compared_with_original = 0;
  if (compare) {
    for (const std::string& mode : compared_modes()) {
      const bool is_report = mode.rfind("report", 0) == 0;
      const std::string tperf_mode = is_report ? mode + " --no-unwind-summary" : mode;
      // tperf's own output on the original in each mode (the pipe and file families apart: perf
      // shows no Children column for a pipe).
      std::map<bool, std::string> reference;
      const bool every_layout =
          std::find(compared_layout_modes().begin(), compared_layout_modes().end(), mode) != compared_layout_modes().end();
      for (const Layout& l : layouts) {
        if (!every_layout && &l != &layouts.front()) continue;
        if (!l.path.empty()) {
          CommandResult p = run(fmt::format("perf {} -i {}", mode, shell_quote(l.path)));
          if (perf_reads(p)) {
            CommandResult t = run(tperf_command(l, tperf_mode + " " + input_option(l)));
            const std::string diff = first_difference(normalized(p.out), normalized(t.out));
            EXPECT_EQ(diff, "") << rel << " [" << l.name << "]: tperf " << tperf_mode << " differs from perf " << mode;
            ++compared_with_perf;
            if (!reference.count(l.pipe)) reference[l.pipe] = normalized(t.out);
            continue;
          }
        }
        // perf cannot read this layout (or it is standard input): the same data as another
        // layout of its family, so the same output.
        CommandResult t = run(tperf_command(l, tperf_mode + " " + input_option(l)));
        if (t.status != 0) continue;  // a damaged file: part (1) checked its end
        auto ref = reference.find(l.pipe);
        if (ref == reference.end()) {
          reference[l.pipe] = normalized(t.out);
          continue;
        }
        const std::string diff = first_difference(ref->second, normalized(t.out));
        EXPECT_EQ(diff, "") << rel << " [" << l.name << "]: tperf " << tperf_mode
                            << " differs from tperf on another layout of the same data";
        ++compared_with_original;
      }
    }
  }
  std::cout << fmt::format("[ matrix ] {}: {} layouts ({} converted), {} runs, {} outputs compared with perf, {} with "
                           "another layout{}\n",
                           rel, layouts.size(), converted, runs, compared_with_perf, compared_with_original,
                           compare ? "" : fmt::format(" (not compared: {})", known_differences().at(rel)));
  // A file perf reads must have been compared with it.
  if (compare && perf_reads(run(fmt::format("perf script -i {}", shell_quote(original))))) {
    EXPECT_GT(compared_with_perf, 0u) << rel << ": perf reads it, yet nothing was compared with perf";
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, Matrix, ::testing::ValuesIn(corpus_files()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

// The parameter list comes from the corpus: an empty one would make the matrix pass having run
// nothing.
TEST(MatrixCorpus, TheCorpusIsThere) {
  const auto files = corpus_files();
  EXPECT_GE(files.size(), 40u) << "expected the corpus of ../shared/corpus (21 recordings, 28 crashers) at "
                               << corpus_dir();
}

// The files perf 6.1 reads as they are get compared with perf (guards the perf_reads rule: a
// change that made every comparison fall back to tperf-against-tperf would show here).
TEST(MatrixCorpus, PerfReadsTheUsualFiles) {
  TPERF_REQUIRE_PERF();
  for (const char* rel : {"quipper/testdata/perf.data.callgraph-3.8", "quipper/testdata/perf.data.forkexit-3.8",
                          "quipper/testdata/perf.data.piped.target-3.8"}) {
    CommandResult p = run(fmt::format("perf script -i {}", shell_quote(corpus_dir() + "/" + rel)));
    EXPECT_TRUE(perf_reads(p)) << rel << ": perf status " << p.status << "\n" << p.err.substr(0, 500);
  }
}

}  // namespace
}  // namespace tperf

namespace tperf {
namespace {

using test::e2e::kStripPerfTip;

// The pipe of every day: `perf record -o - -- CMD | tperf report -i -` shows what
// `perf record -o - -- CMD | perf report -i -` shows (tperf report used to crash on any pipe).
TEST(PipeE2E, PerfRecordPipedIntoReportAndScript) {
  TPERF_REQUIRE_PERF();
  std::string error;
  const std::string spin = test::e2e::workload("spin", &error);
  ASSERT_FALSE(spin.empty()) << "set-up failed: " << error;
  const std::string stream = test::e2e::scratch_dir() + "/piped.data";
  for (const char* how : {"-e cpu-clock -g", "-e cpu-clock"}) {
    SCOPED_TRACE(how);
    CommandResult rec = run(fmt::format("perf record -q {} -o - -- {} 0.3 > {}", how, shell_quote(spin), shell_quote(stream)));
    ASSERT_EQ(rec.status, 0) << "set-up failed: perf record into a pipe: " << rec.err;
    for (const char* args : {"", "--no-children", "-g folded", "-s comm,dso,sym -n", "-G", "-g callee", "-s comm,symbol -n"}) {
      if (std::string(how).find("-g") == std::string::npos && std::string(args).find('g') != std::string::npos) continue;
      SCOPED_TRACE(args);
      auto c = test::e2e::compare_outputs(
          fmt::format("cat {} | perf report --stdio -i - {} | {}", shell_quote(stream), args, kStripPerfTip),
          fmt::format("cat {} | {} report -i - --no-unwind-summary {}", shell_quote(stream), tperf(), args), stream);
      EXPECT_EQ(c.diff, "");
      EXPECT_EQ(c.tperf_status, 0) << c.tperf_err;
      EXPECT_GE(c.perf_lines, 12u) << "perf printed too little";
    }
    auto s = test::e2e::compare_outputs(fmt::format("cat {} | perf script -i -", shell_quote(stream)),
                                        fmt::format("cat {} | {} script -i -", shell_quote(stream), tperf()), stream);
    EXPECT_EQ(s.diff, "");
    EXPECT_EQ(s.tperf_status, 0) << s.tperf_err;
    EXPECT_GE(s.perf_lines, 20u) << "perf printed too little";
  }
}

}  // namespace
}  // namespace tperf
