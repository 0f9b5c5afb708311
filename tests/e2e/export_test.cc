// tperf collapse and tperf export on real recordings made at test time with the system perf:
//  - collapse equals stackcollapse-perf.pl's rules applied, in this test, to `perf script`'s
//    text (perf is the oracle of the frames; the rules are re-written here from the script's
//    documented behaviour, apart from output/collapse.cc);
//  - the pprof file decodes with protoc (tests/data/profile.proto) and with npm pprof-format,
//    and its self values per function equal `perf report --no-children -s sym`'s;
//  - the speedscope file loads in speedscope's own app in headless Chromium (tests/js);
//  - the Firefox Profiler file passes the structural checks of tests/js/firefox_check.js.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "e2e/recording_util.h"
#include "test_util.h"

namespace tperf::test::e2e {
namespace {

const std::string kTperf = TPERF_BINARY;

std::string js(const std::string& script) { return shell_quote(std::string(TPERF_SOURCE_DIR) + "/tests/js/" + script); }

// Perl's split: fields between the separators, trailing empty ones dropped.
std::vector<std::string> perl_split(const std::string& s, const std::string& sep) {
  std::vector<std::string> out;
  size_t pos = 0, at;
  while ((at = s.find(sep, pos)) != std::string::npos) {
    out.push_back(s.substr(pos, at - pos));
    pos = at + sep.size();
  }
  out.push_back(s.substr(pos));
  while (!out.empty() && out.back().empty()) out.pop_back();
  return out;
}

struct StackcollapseOptions {
  bool pid = false, tid = false, period = false;
};

// stackcollapse-perf.pl's reading of `perf script` text (its regexes, written again here): a
// header line starts a sample, frame lines (leaf first) follow, a blank line ends it; each frame
// "PC SYM+OFF (DSO)" becomes names by its rules; only the first event type met is kept.
std::string stackcollapse(const std::string& script, const StackcollapseOptions& o) {
  static const std::regex header(R"(^(\S.+?)\s+(\d+)/*(\d+)*\s+)");
  static const std::regex event_re(R"(:\s*(\d+)*\s+(\S+):\s*$)");
  static const std::regex frame_re(R"(^\s*(\w+)\s*(.+) \((.*)\))");
  static const std::regex offset(R"(\+0x[\da-f]+$)");
  static const std::regex go_method(R"(\.\(.*\)\.)");
  static const std::regex args(R"(\((?!anonymous namespace\)).*)");
  std::map<std::string, uint64_t> collapsed;
  std::vector<std::string> stack;  // root first
  std::string pname, event_filter;
  bool have_pname = false;
  uint64_t period = 1;
  std::istringstream in(script);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] == '#') continue;
    std::smatch m;
    if (line.empty()) {
      if (have_pname) {
        std::string key = pname;
        for (const auto& f : stack) key += ";" + f;
        collapsed[key] += o.period ? period : 1;
      }
      stack.clear();
      have_pname = false;
      continue;
    }
    if (std::regex_search(line, m, header)) {
      std::string comm = m[1], pid = m[2], tid = m[3];
      if (tid.empty()) {
        tid = pid;
        pid = "?";
      }
      std::smatch e;
      period = 1;
      if (std::regex_search(line, e, event_re)) {
        if (e[1].matched) period = std::stoull(e[1]);
        if (event_filter.empty()) event_filter = e[2];
        if (e[2] != event_filter) continue;
      }
      pname = o.tid ? comm + "-" + pid + "/" + tid : o.pid ? comm + "-" + pid : comm;
      for (char& c : pname) c = c == ' ' ? '_' : c;
      have_pname = true;
    } else if (std::regex_search(line, m, frame_re)) {
      if (!have_pname) continue;
      std::string raw = std::regex_replace(std::string(m[2]), offset, "");
      const std::string mod = m[3];
      if (!raw.empty() && raw[0] == '(') continue;
      std::vector<std::string> parts;
      for (std::string func : perl_split(raw, "->")) {
        if (func == "[unknown]") func = "[" + (mod != "[unknown]" ? mod.substr(mod.rfind('/') + 1) : "unknown") + "]";
        for (char& c : func) c = c == ';' ? ':' : c;
        if (!std::regex_search(func, go_method)) {
          func = std::regex_replace(func, args, "", std::regex_constants::format_first_only);
        }
        std::erase(func, '"');
        std::erase(func, '\'');
        if (pname.starts_with("java") && func.find('/') != std::string::npos && func[0] == 'L') func.erase(0, 1);
        if (!parts.empty()) func += "_[i]";
        parts.push_back(func);
      }
      stack.insert(stack.begin(), parts.begin(), parts.end());
    }
  }
  std::string out;
  for (const auto& [k, v] : collapsed) out += k + " " + std::to_string(v) + "\n";
  return out;
}

struct Recorded {
  std::string data;
  std::string error;
};

// perf record -e cpu-clock -g of `cmd`, once per name and test program.
const Recorded& record(const std::string& name, const std::string& cmd) {
  static std::map<std::string, Recorded> cache;
  auto [it, fresh] = cache.try_emplace(name);
  if (fresh) {
    it->second.data = scratch_dir() + "/export-" + name + ".data";
    CommandResult r = run(fmt::format("perf record -q -e cpu-clock -g -o {} -- {}", shell_quote(it->second.data), cmd));
    if (r.status != 0) it->second.error = "perf record: " + r.err;
  }
  return it->second;
}

const Recorded& spin_recording() {
  std::string error;
  const std::string spin = workload("spin", &error);
  if (spin.empty()) {
    static Recorded failed;
    failed.error = error;
    return failed;
  }
  return record("spin", shell_quote(spin) + " 0.3");
}

// A static stripped binary: frames without symbols, in a DSO (stackcollapse names them by it).
const Recorded& stripped_recording() {
  static std::string binary;
  static std::string error;
  if (binary.empty() && error.empty()) {
    binary = scratch_dir() + "/export_stripped";
    CommandResult cc = run(fmt::format("gcc -O1 -static -s -fno-omit-frame-pointer -pthread -o {} {}/tests/e2e/workloads/stripped_hot_loops.c",
                                       shell_quote(binary), TPERF_SOURCE_DIR));
    if (cc.status != 0) error = "gcc: " + cc.err;
  }
  if (!error.empty()) {
    static Recorded failed;
    failed.error = error;
    return failed;
  }
  return record("stripped", shell_quote(binary));
}

void expect_collapse_equals_stackcollapse(const Recorded& r) {
  ASSERT_TRUE(r.error.empty()) << "set-up failed: " << r.error;
  KeepOnFailure keep({r.data});
  CommandResult script =
      run(fmt::format("perf script -i {} -F comm,pid,tid,time,period,event,ip,sym,symoff,dso", shell_quote(r.data)));
  ASSERT_EQ(script.status, 0) << script.err;
  struct Case {
    const char* flags;
    StackcollapseOptions o;
  };
  for (const Case& c : {Case{"", {}}, Case{"--pid", {true, false, false}}, Case{"--tid --period", {false, true, true}}}) {
    SCOPED_TRACE(c.flags);
    const std::string expected = stackcollapse(script.out, c.o);
    ASSERT_GE(std::count(expected.begin(), expected.end(), '\n'), 2) << "perf script printed too little:\n"
                                                                      << script.out.substr(0, 2000);
    CommandResult got = run(fmt::format("{} collapse {} -i {}", kTperf, c.flags, shell_quote(r.data)));
    EXPECT_EQ(got.status, 0) << got.err;
    EXPECT_EQ(got.out, expected);
  }
}

TEST(CollapseE2E, EqualsStackcollapseOfPerfScript) {
  TPERF_REQUIRE_PERF();
  expect_collapse_equals_stackcollapse(spin_recording());
}

TEST(CollapseE2E, FramesWithoutSymbolsAreNamedByTheirDso) {
  TPERF_REQUIRE_PERF();
  const Recorded& r = stripped_recording();
  expect_collapse_equals_stackcollapse(r);
  CommandResult got = run(fmt::format("{} collapse -i {}", kTperf, shell_quote(r.data)));
  EXPECT_NE(got.out.find(";[export_stripped]"), std::string::npos) << got.out.substr(0, 2000);
}

TEST(CollapseE2E, OutputFileAndErrors) {
  TPERF_REQUIRE_PERF();
  const Recorded& r = spin_recording();
  ASSERT_TRUE(r.error.empty()) << "set-up failed: " << r.error;
  const std::string out = scratch_dir() + "/collapse-out.txt";
  CommandResult to_file = run(fmt::format("{} collapse -i {} -o {}", kTperf, shell_quote(r.data), shell_quote(out)));
  EXPECT_EQ(to_file.status, 0) << to_file.err;
  EXPECT_EQ(to_file.out, "");
  CommandResult to_stdout = run(fmt::format("{} collapse {}", kTperf, shell_quote(r.data)));
  EXPECT_EQ(read_file(out), to_stdout.out);
  CommandResult missing = run(fmt::format("{} collapse -i /nonexistent/perf.data", kTperf));
  EXPECT_EQ(missing.status, 2);
  EXPECT_EQ(missing.err, "tperf collapse: /nonexistent/perf.data: No such file or directory\n");
  CommandResult bad = run(fmt::format("{} collapse --bogus", kTperf));
  EXPECT_EQ(bad.status, 129);
  EXPECT_EQ(bad.err, "tperf collapse: unknown option '--bogus'\n");
  CommandResult filter = run(fmt::format("{} collapse -i {} --event-filter cycles", kTperf, shell_quote(r.data)));
  EXPECT_EQ(filter.status, 2);
  EXPECT_EQ(filter.err, fmt::format("tperf collapse: {}: no event 'cycles' in the file (it has: cpu-clock)\n", r.data));
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

TEST(PprofE2E, SelfValuesPerFunctionEqualPerfReport) {
  TPERF_REQUIRE_PERF();
  TPERF_REQUIRE_PROGRAM("protoc");
  TPERF_REQUIRE_PROGRAM("node");
  for (const Recorded* r : {&spin_recording(), &stripped_recording()}) {
    ASSERT_TRUE(r->error.empty()) << "set-up failed: " << r->error;
    const std::string pb = r->data + ".pb.gz";
    KeepOnFailure keep({r->data, pb});
    CommandResult ex = run(fmt::format("{} export --format pprof -i {} -o {}", kTperf, shell_quote(r->data), shell_quote(pb)));
    ASSERT_EQ(ex.status, 0) << ex.err;
    CommandResult protoc = run(fmt::format("gzip -dc {} | protoc --decode=perftools.profiles.Profile -I {}/tests/data profile.proto",
                                           shell_quote(pb), TPERF_SOURCE_DIR));
    ASSERT_EQ(protoc.status, 0) << protoc.err;
    EXPECT_NE(protoc.out.find("string_table: \"cpu-clock\"\nstring_table: \"nanoseconds\"\n"), std::string::npos);
    // The collection time: the recording was written in the last minutes, and not after its
    // file's last modification.
    {
      const size_t at = protoc.out.find("\ntime_nanos: ");
      ASSERT_NE(at, std::string::npos) << "no time_nanos in the profile";
      const int64_t t = std::stoll(protoc.out.substr(at + 13));
      struct stat st {};
      ASSERT_EQ(::stat(r->data.c_str(), &st), 0);
      const int64_t mtime = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
      EXPECT_LE(t, mtime);
      EXPECT_GE(t, mtime - int64_t{600} * 1000000000);
    }
    CommandResult summary = run("node " + js("pprof_summary.js") + " " + shell_quote(pb));
    ASSERT_EQ(summary.status, 0) << summary.err;
    EXPECT_NE(summary.out.find("sample_type samples/count cpu-clock/nanoseconds\n"), std::string::npos) << summary.out;

    // "self NAME SAMPLES PERIOD" lines.
    std::map<std::string, std::pair<uint64_t, uint64_t>> self;
    uint64_t total_samples = 0;
    std::istringstream in(summary.out);
    std::string line;
    while (std::getline(in, line)) {
      if (!line.starts_with("self ")) continue;
      const size_t p2 = line.rfind(' '), p1 = line.rfind(' ', p2 - 1);
      self[line.substr(5, p1 - 5)] = {std::stoull(line.substr(p1 + 1, p2 - p1 - 1)), std::stoull(line.substr(p2 + 1))};
      total_samples += std::stoull(line.substr(p1 + 1, p2 - p1 - 1));
    }
    CommandResult report = run(fmt::format(
        "perf report -i {} --stdio --no-children -s sym -g none -n --show-total-period -q", shell_quote(r->data)));
    ASSERT_EQ(report.status, 0) << report.err;
    // "  12.34%  123  30750000  [.] name"; entries without a symbol are keyed by address in perf.
    // A name may come in more than one DSO (`_start` is in the program and in ld.so), each its
    // own entry in perf and one function name in the summary: perf's are added up by name.
    uint64_t perf_samples = 0, perf_unresolved = 0;
    std::map<std::string, std::pair<uint64_t, uint64_t>> perf_self;
    std::istringstream rin(report.out);
    while (std::getline(rin, line)) {
      std::istringstream f(line);
      std::string pct, level;
      uint64_t samples = 0, period = 0;
      if (!(f >> pct >> samples >> period >> level)) continue;
      perf_samples += samples;
      std::string name;
      std::getline(f, name);
      name = trim(name);
      if (name.starts_with("0x")) {
        perf_unresolved += samples;  // one function "[unknown]" in pprof
        continue;
      }
      perf_self[name].first += samples;
      perf_self[name].second += period;
    }
    const size_t compared = perf_self.size();
    for (const auto& [name, values] : perf_self) {
      EXPECT_EQ(self[name].first, values.first) << name;
      EXPECT_EQ(self[name].second, values.second) << name;
    }
    // The threaded workload's own functions have symbols; the stripped one's none (it may meet no
    // kernel function either in a short run).
    if (r == &spin_recording()) {
      EXPECT_GE(compared, 2u) << report.out;
      EXPECT_GT(self["leaf"].first, 0u);
    } else {
      EXPECT_GT(perf_unresolved, 0u) << report.out;
    }
    EXPECT_EQ(self["[unknown]"].first, perf_unresolved);
    EXPECT_EQ(total_samples, perf_samples);
  }
}

// perf report --no-children -s pid,sym -n --show-total-period (perf's "pid" key is the thread:
// "  TID:comm"): tid -> symbol -> (samples, period), entries without a symbol (keyed by address
// in perf) left out.
std::map<std::string, std::map<std::string, std::pair<uint64_t, uint64_t>>> perf_self_by_thread(const std::string& data) {
  CommandResult report = run(fmt::format(
      "perf report -i {} --stdio --no-children -s pid,sym -g none -n --show-total-period -q", shell_quote(data)));
  EXPECT_EQ(report.status, 0) << report.err;
  std::map<std::string, std::map<std::string, std::pair<uint64_t, uint64_t>>> out;
  std::istringstream in(report.out);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string pct, thread, level;
    uint64_t samples = 0, period = 0;
    if (!(f >> pct >> samples >> period >> thread >> level)) continue;
    std::string name;
    std::getline(f, name);
    name = trim(name);
    if (name.starts_with("0x")) continue;
    auto& entry = out[thread.substr(0, thread.find(':'))][name];
    entry.first += samples;
    entry.second += period;
  }
  return out;
}

// A workload whose hot code is inlined (gcc -O2, always_inline) and recorded with --call-graph
// dwarf: perf shows the inlined functions as frames of their own, and so must pprof's Lines.
constexpr const char* kInlineSource = R"(
#include <stdlib.h>
#include <time.h>
static volatile unsigned long sink;
static double now(void) { struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); return ts.tv_sec + ts.tv_nsec * 1e-9; }
static inline __attribute__((always_inline)) unsigned long inner_sum(unsigned long n) {
  unsigned long s = 0;
  for (unsigned long i = 0; i < n; i++) s += i * sink;
  return s;
}
static inline __attribute__((always_inline)) unsigned long outer_sum(unsigned long n) { return inner_sum(n) + inner_sum(n / 3); }
__attribute__((noinline)) void hot(void) { sink += outer_sum(100000); }
int main(int argc, char** argv) {
  double end = now() + (argc > 1 ? atof(argv[1]) : 0.3);
  while (now() < end) hot();
  return 0;
}
)";

const Recorded& inline_dwarf_recording() {
  static Recorded r;
  if (!r.data.empty() || !r.error.empty()) return r;
  const std::string src = scratch_dir() + "/export_inline.c", bin = scratch_dir() + "/export_inline";
  std::ofstream(src) << kInlineSource;
  CommandResult cc = run(fmt::format("gcc -O2 -g -fomit-frame-pointer -o {} {}", shell_quote(bin), shell_quote(src)));
  if (cc.status != 0) {
    r.error = "gcc: " + cc.err;
    return r;
  }
  r.data = scratch_dir() + "/export-inline.data";
  CommandResult rec = run(fmt::format("perf record -q -e cpu-clock --call-graph dwarf,8192 -o {} -- {} 0.4",
                                      shell_quote(r.data), shell_quote(bin)));
  if (rec.status != 0) r.error = "perf record: " + rec.err;
  return r;
}

TEST(PprofE2E, InlinedFramesAreLinesOfTheirLocationCalleeFirst) {
  TPERF_REQUIRE_PERF();
  TPERF_REQUIRE_PROGRAM("node");
  const Recorded& r = inline_dwarf_recording();
  ASSERT_TRUE(r.error.empty()) << "set-up failed: " << r.error;
  const std::string pb = r.data + ".pb.gz";
  KeepOnFailure keep({r.data, pb});
  CommandResult ex = run(fmt::format("{} export --format pprof -i {} -o {}", kTperf, shell_quote(r.data), shell_quote(pb)));
  ASSERT_EQ(ex.status, 0) << ex.err;
  CommandResult summary = run("node " + js("pprof_summary.js") + " " + shell_quote(pb));
  ASSERT_EQ(summary.status, 0) << summary.err;
  // "stack pid=P,tid=T,comm=C ROOT;...;LEAF SAMPLES PERIOD" -> tid and names.
  static const std::regex stack_re(R"(^stack pid=\d+,tid=(\d+),comm=\S+ (.*) (\d+) (\d+)$)");
  std::map<std::string, uint64_t> got;
  std::istringstream in(summary.out);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, stack_re)) got[m[1].str() + " " + m[2].str()] += std::stoull(m[3]);
  }
  // perf script: "TID" then "\tIP SYM" or "\tIP SYM (inlined)" per frame, leaf first.
  CommandResult script = run(fmt::format("perf script -i {} -F tid,ip,sym", shell_quote(r.data)));
  ASSERT_EQ(script.status, 0) << script.err;
  std::map<std::string, uint64_t> expected;
  std::istringstream sin(script.out + "\n");
  std::string tid, stack;
  bool open = false, inlined = false;
  while (std::getline(sin, line)) {
    if (line.empty()) {
      if (open) ++expected[tid + " " + stack];
      open = false;
      continue;
    }
    if (line[0] != '\t') {
      tid = trim(line);
      stack.clear();
      open = true;
      continue;
    }
    std::string f = trim(line);
    std::string sym = f.substr(f.find(' ') + 1);
    if (sym.ends_with(" (inlined)")) {
      sym.resize(sym.size() - 10);
      inlined = true;
    }
    stack = stack.empty() ? sym : sym + ";" + stack;
  }
  ASSERT_TRUE(inlined) << "perf shows no inlined frame:\n" << script.out.substr(0, 3000);
  EXPECT_EQ(got, expected);
  EXPECT_NE(summary.out.find("main;hot;outer_sum;inner_sum "), std::string::npos) << summary.out.substr(0, 3000);
}

TEST(SpeedscopeE2E, SpeedscopeAppShowsPerfsSelfTimes) {
  TPERF_REQUIRE_PERF();
  TPERF_REQUIRE_PROGRAM("node");
  TPERF_REQUIRE_PROGRAM("chromium");
  const Recorded& r = spin_recording();
  ASSERT_TRUE(r.error.empty()) << "set-up failed: " << r.error;
  const std::string json = r.data + ".speedscope.json";
  KeepOnFailure keep({r.data, json});
  CommandResult ex = run(fmt::format("{} export --format speedscope -i {} -o {}", kTperf, shell_quote(r.data), shell_quote(json)));
  ASSERT_EQ(ex.status, 0) << ex.err;
  CommandResult app = run("node " + js("speedscope_check.js") + " " + shell_quote(json));
  ASSERT_EQ(app.status, 0) << app.err;
  // The first profile is the first thread; speedscope counts one profile per thread.
  static const std::regex title_re(R"(^title (\S+) \((\d+)/(\d+)\) \(1/(\d+)\)$)");
  std::istringstream in(app.out);
  std::string line;
  std::getline(in, line);
  std::smatch m;
  ASSERT_TRUE(std::regex_match(line, m, title_re)) << app.out;
  EXPECT_EQ(m[1], "spin");
  const std::string tid = m[3];
  CommandResult tids = run(fmt::format("perf script -i {} -F tid | sort -u | wc -l", shell_quote(r.data)));
  EXPECT_EQ(std::stoul(m[4]), std::stoul(tids.out));
  const auto perf = perf_self_by_thread(r.data)[tid];
  ASSERT_GE(perf.size(), 1u);
  std::map<std::string, double> shown;
  double precision = -1;
  while (std::getline(in, line)) {
    if (line.starts_with("precision ")) precision = std::stod(line.substr(10));
    if (!line.starts_with("row ")) continue;
    const size_t sp = line.find(' ', 4);
    shown[line.substr(sp + 1)] += std::stod(line.substr(4, sp - 4));
  }
  ASSERT_GE(precision, 0) << app.out;
  for (const auto& [name, self] : perf) {
    ASSERT_TRUE(shown.count(name)) << name << " not in speedscope's table:\n" << app.out;
    EXPECT_NEAR(shown[name], static_cast<double>(self.second), precision + 0.5) << name;
  }
  for (const auto& [name, ns] : shown) {
    if (name.starts_with("[unknown]") || perf.count(name)) continue;
    EXPECT_EQ(ns, 0) << name << ": self time in speedscope, none in perf report";
  }
}

TEST(FirefoxE2E, GeckoTablesHoldAndSelfCountsEqualPerf) {
  TPERF_REQUIRE_PERF();
  TPERF_REQUIRE_PROGRAM("node");
  for (const Recorded* r : {&spin_recording(), &stripped_recording()}) {
    ASSERT_TRUE(r->error.empty()) << "set-up failed: " << r->error;
    const std::string json = r->data + ".firefox.json";
    KeepOnFailure keep({r->data, json});
    CommandResult ex = run(fmt::format("{} export --format firefox -i {} -o {}", kTperf, shell_quote(r->data), shell_quote(json)));
    ASSERT_EQ(ex.status, 0) << ex.err;
    CommandResult check = run("node " + js("firefox_check.js") + " " + shell_quote(json));
    ASSERT_EQ(check.status, 0) << check.err;
    // thread and self lines, per tid (a tid whose comm changed has one thread per comm: summed).
    std::map<std::string, std::map<std::string, uint64_t>> self;
    std::map<std::string, uint64_t> thread_samples;
    std::istringstream in(check.out);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string kind, a, b;
      f >> kind;
      if (kind == "thread") {
        std::string pid, tid;
        f >> pid >> tid;
        const size_t sp = line.rfind(' ');
        thread_samples[tid] += std::stoull(line.substr(sp + 1));
      } else if (kind == "self") {
        std::string tid;
        f >> tid;
        const size_t sp = line.rfind(' ');
        const size_t start = kind.size() + 1 + tid.size() + 1;
        self[tid][line.substr(start, sp - start)] += std::stoull(line.substr(sp + 1));
      }
    }
    CommandResult tids = run(fmt::format("perf script -i {} -F tid | sort -u | wc -l", shell_quote(r->data)));
    EXPECT_EQ(thread_samples.size(), std::stoul(tids.out)) << check.out;
    auto perf_threads = perf_self_by_thread(r->data);
    for (const auto& [tid, by_name] : self) {
      size_t perf_total = 0;
      CommandResult n = run(fmt::format("perf script -i {} -F tid | awk '$1 == {}' | wc -l", shell_quote(r->data), tid));
      perf_total = std::stoul(n.out);
      EXPECT_EQ(thread_samples[tid], perf_total) << "tid " << tid;
      for (const auto& [name, counts] : perf_threads[tid]) {
        EXPECT_EQ(by_name.count(name) ? by_name.at(name) : 0, counts.first) << "tid " << tid << " " << name;
      }
    }
  }
}

TEST(ExportE2E, ErrorsAndDefaults) {
  CommandResult missing = run(fmt::format("{} export --format pprof -i /nonexistent/perf.data -o -", kTperf));
  EXPECT_EQ(missing.status, 2);
  EXPECT_EQ(missing.err, "tperf export: /nonexistent/perf.data: No such file or directory\n");
  CommandResult bad_format = run(fmt::format("{} export --format svg", kTperf));
  EXPECT_EQ(bad_format.status, 129);
  CommandResult no_format = run(fmt::format("{} export -i x.data", kTperf));
  EXPECT_EQ(no_format.status, 129);
}

TEST(ExportE2E, ThreadFilterAndStandardInput) {
  TPERF_REQUIRE_PERF();
  TPERF_REQUIRE_PROGRAM("node");
  const Recorded& r = spin_recording();
  ASSERT_TRUE(r.error.empty()) << "set-up failed: " << r.error;
  KeepOnFailure keep({r.data});
  // The tids perf saw, and the samples of the last one.
  CommandResult tids = run(fmt::format("perf script -i {} -F tid | sort -n | uniq -c", shell_quote(r.data)));
  std::istringstream in(tids.out);
  std::string count, tid;
  size_t n = 0;
  while (in >> count >> tid) ++n;
  ASSERT_GE(n, 2u) << tids.out;
  const std::string pb = r.data + ".tid.pb.gz";
  CommandResult ex = run(fmt::format("{} export --format pprof --tid {} -i {} -o {}", kTperf, tid, shell_quote(r.data), shell_quote(pb)));
  ASSERT_EQ(ex.status, 0) << ex.err;
  CommandResult summary = run("node " + js("pprof_summary.js") + " " + shell_quote(pb));
  ASSERT_EQ(summary.status, 0) << summary.err;
  uint64_t samples = 0;
  std::istringstream sin(summary.out);
  std::string line;
  static const std::regex stack_re(R"(^stack pid=\d+,tid=(\d+),\S* .* (\d+) \d+$)");
  while (std::getline(sin, line)) {
    std::smatch m;
    if (!std::regex_match(line, m, stack_re)) continue;
    EXPECT_EQ(m[1], tid) << line;
    samples += std::stoull(m[2]);
  }
  EXPECT_EQ(samples, std::stoull(count));
  // A pipe on standard input is read as "-", as the other commands do (a pipe-mode stream, made
  // here by tperf convert --pipe, as perf record -o - writes one).
  CommandResult piped = run(fmt::format("{} convert --pipe {} - | {} collapse", kTperf, shell_quote(r.data), kTperf));
  CommandResult named = run(fmt::format("{} collapse -i {}", kTperf, shell_quote(r.data)));
  EXPECT_EQ(piped.status, 0) << piped.err;
  EXPECT_EQ(piped.out, named.out);
}

TEST(ExportE2E, DefaultOutputNamesAndUnwritableOutput) {
  TPERF_REQUIRE_PERF();
  const Recorded& r = spin_recording();
  ASSERT_TRUE(r.error.empty()) << "set-up failed: " << r.error;
  TempDir dir;
  for (const auto& [format, name] : std::vector<std::pair<std::string, std::string>>{
           {"pprof", "perf.pb.gz"}, {"firefox", "perf.firefox.json"}, {"speedscope", "perf.speedscope.json"}}) {
    CommandResult ex = run(fmt::format("cd {} && {} export --format {} -i {}", shell_quote(dir.path()), kTperf, format,
                                       shell_quote(r.data)));
    EXPECT_EQ(ex.status, 0) << ex.err;
    EXPECT_EQ(ex.out, "");
    EXPECT_FALSE(read_file(dir.file(name)).empty()) << name;
  }
  // pprof files are gzip streams (magic 1f 8b).
  EXPECT_EQ(read_file(dir.file("perf.pb.gz")).substr(0, 2), "\x1f\x8b");
  // The JSON exports are JSON; a .gz Firefox name is gzipped.
  CommandResult gz = run(fmt::format("{} export --format firefox -i {} -o {}", kTperf, shell_quote(r.data),
                                     shell_quote(dir.file("p.json.gz"))));
  EXPECT_EQ(gz.status, 0) << gz.err;
  CommandResult same = run(fmt::format("gzip -dc {} | cmp - {}", shell_quote(dir.file("p.json.gz")),
                                       shell_quote(dir.file("perf.firefox.json"))));
  EXPECT_EQ(same.status, 0) << same.out << same.err;
  CommandResult bad = run(fmt::format("{} export --format pprof -i {} -o /nonexistent/dir/p.pb.gz", kTperf, shell_quote(r.data)));
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(bad.err, "tperf export: /nonexistent/dir/p.pb.gz: cannot create: No such file or directory\n");
  CommandResult bad_collapse = run(fmt::format("{} collapse -i {} -o /nonexistent/dir/f.txt", kTperf, shell_quote(r.data)));
  EXPECT_EQ(bad_collapse.status, 2);
  EXPECT_EQ(bad_collapse.err, "tperf collapse: /nonexistent/dir/f.txt: cannot create: No such file or directory\n");
}

}  // namespace
}  // namespace tperf::test::e2e
