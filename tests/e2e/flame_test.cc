// `tperf flame` end to end. FlameCommandE2E: the command's files and errors (the SVG read back with
// python3's xml.etree, the page's data with its json). FlameBrowserE2E: the flame page in a real
// browser: headless Chromium (/usr/bin/chromium) driven by
// tests/browser/flame_check.js (puppeteer-core), which clicks, types and reads the page as a
// person would and prints what it saw. Here those observations are held against
// `perf report` on the same recording, and against numbers written by hand for a synthetic
// profile. A missing node, Chromium or puppeteer-core is a set-up failure (scripts/setup.sh
// installs them), never a skip.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/profile.h"
#include "e2e/recording_util.h"
#include "output/flame_page.h"
#include "output/flame_test_profile.h"
#include "test_util.h"

namespace tperf {
namespace {

namespace fs = std::filesystem;
using test::shell_quote;

const std::string kBrowserDir = std::string(TPERF_SOURCE_DIR) + "/tests/browser";

// Where screenshots and pages are kept for a person to look at: next to the test binary.
std::string artifact_dir() {
  const std::string dir = fs::path(TPERF_BINARY).parent_path().string() + "/flame-artifacts";
  fs::create_directories(dir);
  return dir;
}

#define REQUIRE_BROWSER()                                                                                     \
  do {                                                                                                        \
    TPERF_REQUIRE_PROGRAM("node");                                                                            \
    ASSERT_TRUE(fs::exists("/usr/bin/chromium")) << "set-up failed: no /usr/bin/chromium (scripts/setup.sh)"; \
    ASSERT_TRUE(fs::exists(kBrowserDir + "/node_modules/puppeteer-core/package.json"))                        \
        << "set-up failed: no puppeteer-core in tests/browser (scripts/setup.sh runs npm ci there)";          \
  } while (0)

struct PageRun {
  int status = -1;
  std::string out;
  std::string err;
  std::map<std::string, std::string> facts;
  std::vector<std::string> page_errors;
  std::string get(const std::string& k) const {
    auto it = facts.find(k);
    return it == facts.end() ? "" : it->second;
  }
  double num(const std::string& k) const {
    const std::string v = get(k);
    return v.empty() ? -1 : std::stod(v);
  }
};

PageRun drive_page(const std::string& page, const std::string& args) {
  const test::e2e::CommandResult r = test::e2e::run(
      fmt::format("timeout 300 node {} {} {}", shell_quote(kBrowserDir + "/flame_check.js"), shell_quote(page), args));
  PageRun run;
  run.status = r.status;
  run.out = r.out;
  run.err = r.err;
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    const size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = line.substr(0, eq);
    if (key == "page_error") {
      run.page_errors.push_back(line.substr(eq + 1));
    } else {
      run.facts[key] = line.substr(eq + 1);
    }
  }
  return run;
}

std::vector<double> numbers(const std::string& csv) {
  std::vector<double> out;
  std::istringstream in(csv);
  std::string v;
  while (std::getline(in, v, ',')) {
    if (!v.empty()) out.push_back(std::stod(v));
  }
  return out;
}

bool non_increasing(const std::vector<double>& v) { return std::is_sorted(v.rbegin(), v.rend()); }
bool non_decreasing(const std::vector<double>& v) { return std::is_sorted(v.begin(), v.end()); }

// `perf report -s sym -g none` lines "    97.52%     0.00%  [.] leaf": symbol -> the columns'
// percentages (Children, Self with --children; Overhead alone with --no-children).
std::map<std::string, std::vector<double>> perf_shares(const std::string& report) {
  std::map<std::string, std::vector<double>> out;
  static const std::regex line_re(R"(^\s+([0-9.]+)%(?:\s+([0-9.]+)%)?\s+\[[.k]\]\s+(.*\S)\s*$)");
  std::istringstream in(report);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (!std::regex_match(line, m, line_re)) continue;
    std::vector<double> cols{std::stod(m[1])};
    if (m[2].matched) cols.push_back(std::stod(m[2]));
    out.emplace(m[3], cols);  // the first (heaviest) entry of a name
  }
  return out;
}

// The first symbol perf report lists (its heaviest entry).
std::string perf_first_symbol(const std::string& report) {
  static const std::regex line_re(R"(^\s+[0-9.]+%(?:\s+[0-9.]+%)?\s+\[[.k]\]\s+(.*\S)\s*$)");
  std::istringstream in(report);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != '#' && std::regex_match(line, m, line_re)) return m[1];
  }
  return "";
}

const test::e2e::Recording& spin_recording() {
  static const test::e2e::Recording rec = [] {
    test::e2e::Recording r;
    std::string err;
    const std::string w = test::e2e::workload("spin", &err);
    if (w.empty()) {
      r.error = err;
      return r;
    }
    const std::string path = test::e2e::scratch_dir() + "/flame-spin.data";
    // 0.6 s on two threads at perf's default 4000 Hz: a few thousand samples, so the shares are
    // stable to perf report's two decimals and leaf dominates.
    return test::e2e::record_with_perf(
        fmt::format("timeout 60 perf record -q -e cpu-clock -g -o {} -- {} 0.6", shell_quote(path), shell_quote(w)), path);
  }();
  return rec;
}

TEST(FlameBrowserE2E, RealRecordingRendersZoomsSearchesAndSorts) {
  REQUIRE_BROWSER();
  TPERF_REQUIRE_RECORDING(rec, spin_recording());
  const std::string page = artifact_dir() + "/flame-spin.html";
  const test::e2e::CommandResult made =
      test::e2e::run(fmt::format("{} flame -i {} -o {}", TPERF_BINARY, shell_quote(rec.path), shell_quote(page)));
  ASSERT_EQ(made.status, 0) << made.err;
  EXPECT_NE(made.out.find("wrote " + page), std::string::npos) << made.out;
  test::e2e::KeepOnFailure keep({rec.path, page});

  // The oracle: perf's own shares on the same file.
  const test::e2e::CommandResult self_report =
      test::e2e::run(fmt::format("perf report -i {} --stdio --no-children -s sym -g none 2>/dev/null", shell_quote(rec.path)));
  const test::e2e::CommandResult children_report =
      test::e2e::run(fmt::format("perf report -i {} --stdio --children -s sym -g none 2>/dev/null", shell_quote(rec.path)));
  ASSERT_EQ(self_report.status, 0);
  ASSERT_EQ(children_report.status, 0);
  const auto self_shares = perf_shares(self_report.out);
  const auto children_shares = perf_shares(children_report.out);
  ASSERT_TRUE(self_shares.count("leaf")) << self_report.out;
  ASSERT_TRUE(children_shares.count("leaf")) << children_report.out;
  ASSERT_TRUE(children_shares.count("outer")) << children_report.out;
  ASSERT_EQ(children_shares.at("leaf").size(), 2u) << children_report.out;
  // leaf's usual caller in perf script's chains (frame-pointer chains may skip middle, whose
  // return address the leaf's frame does not always hold).
  std::string leaf_caller;
  {
    const test::e2e::CommandResult chains =
        test::e2e::run(fmt::format("perf script -i {} -F ip,sym 2>/dev/null", shell_quote(rec.path)));
    ASSERT_EQ(chains.status, 0);
    std::map<std::string, int> callers;
    std::istringstream in(chains.out);
    std::string line, previous;
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string ip, sym;
      fields >> ip >> sym;
      if (previous == "leaf" && !sym.empty() && sym != "leaf") callers[sym]++;
      previous = sym;
    }
    int most = 0;
    for (const auto& [name, n] : callers) {
      if (n > most) most = n, leaf_caller = name;
    }
    ASSERT_FALSE(leaf_caller.empty()) << chains.out.substr(0, 2000);
  }

  // Periods per thread from perf script: the totals of the page's thread filter.
  const test::e2e::CommandResult periods =
      test::e2e::run(fmt::format("perf script -i {} -F tid,period 2>/dev/null", shell_quote(rec.path)));
  ASSERT_EQ(periods.status, 0);
  std::map<std::string, double> per_tid;
  double all_periods = 0;
  {
    std::istringstream in(periods.out);
    std::string tid;
    double period = 0;
    while (in >> tid >> period) {
      per_tid[tid] += period;
      all_periods += period;
    }
  }
  ASSERT_EQ(per_tid.size(), 2u) << periods.out;  // the workload's two threads
  const std::string tid = per_tid.begin()->first;

  const std::string shot = artifact_dir() + "/flame-spin.png";
  fs::remove(shot);
  const PageRun run = drive_page(page, "--zoom outer --sort --thread " + tid + " --search '^leaf$' --screenshot " + shell_quote(shot));
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  for (const auto& e : run.page_errors) ADD_FAILURE() << "page error: " << e;

  // Rendered: frames drawn and pixels painted.
  EXPECT_GT(run.num("drawn"), 5) << run.out;
  EXPECT_GT(run.num("painted"), 10000) << run.out;

  // The whole and one thread's share: perf script's sums of the periods.
  EXPECT_EQ(run.num("total"), all_periods) << run.out;
  EXPECT_EQ(run.get("thread_offered"), "1") << run.out;
  EXPECT_EQ(run.num("thread_total"), per_tid.at(tid)) << run.out;
  EXPECT_GT(run.num("thread_painted"), 1000) << run.out;
  EXPECT_EQ(run.num("thread_back_total"), all_periods) << run.out;

  // A click on outer zooms: it is the breadcrumb's last step and spans the canvas.
  ASSERT_EQ(run.get("zoom_found"), "1") << run.out;
  EXPECT_EQ(run.get("zoom_name"), "outer");
  const std::string crumbs = run.get("breadcrumb");
  EXPECT_EQ(crumbs.substr(0, 3), "all") << crumbs;
  EXPECT_EQ(crumbs.substr(crumbs.size() - std::string(" > outer").size()), " > outer") << crumbs;
  EXPECT_NEAR(run.num("zoom_after_w"), run.num("canvas_css_width"), 1.0) << run.out;
  EXPECT_LT(run.num("zoom_before_w"), run.num("zoom_after_w") - 1) << run.out;
  EXPECT_EQ(run.get("zoom_back"), "all");
  // The tooltip of outer: its name, samples and share.
  EXPECT_EQ(run.get("tooltip").substr(0, 7), "outer\\n") << run.get("tooltip");
  EXPECT_NE(run.get("tooltip").find(" samples"), std::string::npos) << run.get("tooltip");
  EXPECT_TRUE(std::regex_search(run.get("tooltip"), std::regex("[0-9]+\\.[0-9]{2}% of all"))) << run.get("tooltip");
  // Flame: the root is the lowest row; icicle: the top one.
  EXPECT_GT(run.num("flame_root_y"), 50) << run.out;
  EXPECT_LT(run.num("icicle_root_y"), 5) << run.out;

  // The search for leaf highlights it and gives perf's shares: its self share is perf report
  // --no-children's, its total share the Children column of perf report --children (the
  // interrupts taken in leaf are above it).
  EXPECT_GT(run.num("search_highlighted"), 100) << run.out;
  EXPECT_NEAR(run.num("search_self"), self_shares.at("leaf")[0], 0.011) << run.out << self_report.out;
  EXPECT_NEAR(run.num("search_total"), children_shares.at("leaf")[0], 0.011) << run.out << children_report.out;
  EXPECT_NE(run.get("search_text").find(run.get("search_self") + "%"), std::string::npos) << run.get("search_text");
  EXPECT_EQ(run.get("search_rows"), "leaf");

  // The table sorts both ways by self, and by total; its heaviest self row is perf's first
  // --no-children entry with perf's share, its heaviest total rows carry perf's Children shares.
  const auto asc = numbers(run.get("self_asc"));
  const auto desc = numbers(run.get("self_desc"));
  const auto total = numbers(run.get("total_desc"));
  ASSERT_GE(desc.size(), 4u) << run.out;
  EXPECT_TRUE(non_decreasing(asc)) << run.get("self_asc");
  EXPECT_TRUE(non_increasing(desc)) << run.get("self_desc");
  EXPECT_TRUE(non_increasing(total)) << run.get("total_desc");
  EXPECT_EQ(run.get("self_desc_names").substr(0, run.get("self_desc_names").find('|')), perf_first_symbol(self_report.out));
  EXPECT_NEAR(std::stod(run.get("self_desc_shares")), self_shares.at("leaf")[0], 0.011);
  // perf's Children share of the heaviest entry (the thread entry points, at ~100%).
  const std::string top_children = perf_first_symbol(children_report.out);
  EXPECT_NEAR(std::stod(run.get("total_desc_shares")), children_shares.at(top_children)[0], 0.011)
      << run.get("total_desc_shares") << "\n" << children_report.out;

  // Selecting leaf (the top self row) lists its caller first.
  EXPECT_EQ(run.get("selected"), "leaf");
  EXPECT_EQ(run.get("callers").substr(0, leaf_caller.size()), leaf_caller) << run.get("callers");

  ASSERT_TRUE(fs::exists(shot)) << "no screenshot at " << shot;
  EXPECT_GT(fs::file_size(shot), 20000u);
  std::printf("flame page: %s\nscreenshot: %s\n", page.c_str(), shot.c_str());
}

// Runs python3 with `script` on `file`; its stdout.
std::string python(const std::string& script, const std::string& file, int* status) {
  return test::run_command("PYTHONIOENCODING=utf-8 python3 -c " + shell_quote(script) + " " + shell_quote(file) + " 2>&1",
                           status);
}

TEST(FlameCommandE2E, ErrorsAreOneLineWithPerfsStatuses) {
  test::TempDir dir;
  // A file that is not there: one line naming it, status 2, nothing written.
  auto r = test::e2e::run(fmt::format("cd {} && {} flame -i /nonexistent/in.data", dir.path(), TPERF_BINARY));
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err.rfind("tperf flame: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("/nonexistent/in.data"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir.file("flame.html")));
  // Not a perf.data file.
  const std::string junk = dir.file("junk.data");
  {
    FILE* f = std::fopen(junk.c_str(), "w");
    std::fputs("this is not a perf.data file, only some text that is long enough\n", f);
    std::fclose(f);
  }
  r = test::e2e::run(fmt::format("{} flame -i {} -o {}", TPERF_BINARY, junk, dir.file("o.html")));
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(junk), std::string::npos) << r.err;
  // Command lines it cannot parse: perf's usage status.
  const std::string refused_dir = dir.file("refused");
  fs::create_directories(refused_dir);
  for (const char* args : {"--bogus", "-Y", "--pid abc", "--tid 1,x", "-o"}) {
    r = test::e2e::run(fmt::format("cd {} && {} flame {}", refused_dir, TPERF_BINARY, args));
    EXPECT_EQ(r.status, 129) << args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << ": " << r.err;
    EXPECT_EQ(r.err.rfind("tperf flame: ", 0), 0u) << args << ": " << r.err;
  }
  EXPECT_TRUE(fs::is_empty(refused_dir)) << "a refused command line wrote a file";
  r = test::e2e::run(fmt::format("{} flame --help", TPERF_BINARY));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("--svg"), std::string::npos) << r.out;
  r = test::e2e::run(fmt::format("{} --help", TPERF_BINARY));
  EXPECT_NE(r.out.find("flame"), std::string::npos) << r.out;
}

TEST(FlameCommandE2E, WritesThePageWhereAskedAndSaysWhere) {
  TPERF_REQUIRE_RECORDING(rec, spin_recording());
  test::TempDir dir;
  // Default name in the current directory.
  auto r = test::e2e::run(fmt::format("cd {} && {} flame -i {}", dir.path(), TPERF_BINARY, shell_quote(rec.path)));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("tperf flame: wrote flame.html (", 0), 0u) << r.out;
  EXPECT_TRUE(fs::exists(dir.file("flame.html")));
  // An output that cannot be written: one line naming it, status 2.
  r = test::e2e::run(fmt::format("{} flame -i {} -o /nonexistent-dir/f.html", TPERF_BINARY, shell_quote(rec.path)));
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "tperf flame: /nonexistent-dir/f.html: No such file or directory\n");

  // --tid: only that thread's samples, their periods as perf script sums them.
  const auto periods = test::e2e::run(fmt::format("perf script -i {} -F tid,period 2>/dev/null", shell_quote(rec.path)));
  std::map<std::string, uint64_t> per_tid;
  {
    std::istringstream in(periods.out);
    std::string tid;
    uint64_t period = 0;
    while (in >> tid >> period) per_tid[tid] += period;
  }
  ASSERT_EQ(per_tid.size(), 2u) << periods.out;
  const auto& [tid, sum] = *per_tid.rbegin();
  const std::string page = dir.file("tid.html");
  r = test::e2e::run(fmt::format("{} flame --tid {} -i {} -o {}", TPERF_BINARY, tid, shell_quote(rec.path), page));
  ASSERT_EQ(r.status, 0) << r.err;
  int status = -1;
  const std::string out = python(
      "import json,re,sys\n"
      "h=open(sys.argv[1],encoding='utf-8').read()\n"
      "d=json.loads(re.search(r'<script type=\"application/json\" id=\"tperf-profile\">(.*?)</script>',h,re.S).group(1))\n"
      "print(sorted(set(d['threads']['tid'][t] for t in d['counts']['thread'])), sum(d['counts']['weight']))\n"
      "print('unwind' if d['unwind'] else 'no unwind', len(d['info']))\n",
      page, &status);
  ASSERT_EQ(status, 0) << out;
  std::istringstream lines(out);
  std::string first, second;
  std::getline(lines, first);
  std::getline(lines, second);
  EXPECT_EQ(first, fmt::format("[{}] {}", tid, sum));
  EXPECT_EQ(second.substr(0, 7), "unwind ") << out;  // the unwinding block and header lines are there
}

TEST(FlameCommandE2E, SvgWidthsArePerfsShares) {
  TPERF_REQUIRE_PROGRAM("python3");
  TPERF_REQUIRE_RECORDING(rec, spin_recording());
  test::TempDir dir;
  const std::string svg = artifact_dir() + "/flame-spin.svg";
  auto r = test::e2e::run(fmt::format("{} flame --svg -i {} -o {}", TPERF_BINARY, shell_quote(rec.path), svg));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("tperf flame: wrote " + svg + " (", 0), 0u) << r.out;
  // Per name, the summed width of its outermost frames over the width of "all": its share.
  int status = -1;
  const std::string out = python(
      "import sys, xml.etree.ElementTree as ET\n"
      "S='{http://www.w3.org/2000/svg}'\n"
      "root=ET.parse(sys.argv[1]).getroot()\n"
      "w={}\n"
      "for g in root.iter(S+'g'):\n"
      "  name=g.find(S+'title').text.rsplit(' (',1)[0]\n"
      "  w[name]=w.get(name,0)+float(g.find(S+'rect').get('width'))\n"
      "for n in ('leaf','outer'): print(n, '%.4f' % (100*w.get(n,0)/w['all']))\n",
      svg, &status);
  ASSERT_EQ(status, 0) << out;
  const auto children = test::e2e::run(
      fmt::format("perf report -i {} --stdio --children -s sym -g none 2>/dev/null", shell_quote(rec.path)));
  const auto shares = perf_shares(children.out);
  ASSERT_TRUE(shares.count("leaf") && shares.count("outer")) << children.out;
  std::istringstream in(out);
  std::string name;
  double share = 0;
  int seen = 0;
  while (in >> name >> share) {
    // leaf and outer are not recursive: their frames' widths add up to perf's Children share.
    EXPECT_NEAR(share, shares.at(name)[0], 0.011) << name << "\n" << out << children.out;
    ++seen;
  }
  EXPECT_EQ(seen, 2) << out;
}

void write_page(const analysis::Profile& p, const std::string& path) {
  output::FlamePageOptions options;
  options.title = "hand-built";
  const std::string html = output::flame_page_html(p, options);
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fwrite(html.data(), 1, html.size(), f);
  std::fclose(f);
}

// The page's own arithmetic on the hand-built profile of the writer tests, whose shares are
// written there by hand: event 0 weighs 1000; self main 0, work 200, spin<int> 300, evil 300,
// do_syscall_64 100, [unknown] 100; total main 1000, work 600 (spin and do_syscall_64 below it).
TEST(FlameBrowserE2E, HandBuiltProfileShares) {
  REQUIRE_BROWSER();
  const std::string page = artifact_dir() + "/flame-hand-built.html";
  write_page(test::flame_test_profile(), page);
  PageRun run = drive_page(page, "--sort --search '^(work|spin<int>)$'");
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  for (const auto& e : run.page_errors) ADD_FAILURE() << "page error: " << e;
  EXPECT_EQ(run.num("total"), 1000);
  EXPECT_EQ(run.get("self_desc_shares"), "30.00|30.00|20.00|10.00|10.00") << run.out;
  EXPECT_EQ(run.get("total_desc_shares"), "100.00|60.00|30.00|30.00|10.00") << run.out;
  // spin<int> is inside work: the two together are work's 60%, their self 20% + 30%.
  EXPECT_EQ(run.get("search_total"), "60.00") << run.out;
  EXPECT_EQ(run.get("search_self"), "50.00") << run.out;
  // Names go through the page as they are, markup and all.
  run = drive_page(page, "--search evil");
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  EXPECT_EQ(run.page_errors.size(), 0u);
  EXPECT_EQ(run.get("search_rows"), "evil</script><!--\"&'\xe2\x80\xa8") << run.out;
  EXPECT_EQ(run.get("search_total"), "30.00") << run.out;
}

// A recursive function counts once in its total: a > b > a > b (100) and a alone (100) make a's
// total 200 (100%), not 300; b's 100 (50%).
TEST(FlameBrowserE2E, RecursionCountsOnce) {
  REQUIRE_BROWSER();
  analysis::Profile p;
  p.functions = {{"a", ""}, {"b", ""}};
  p.frames.resize(2);
  p.frames[0].function = 0;
  p.frames[1].function = 1;
  p.stacks = {{analysis::kNoIndex, 0, 0}, {0, 1, 1}, {1, 0, 2}, {2, 1, 3}};
  p.threads = {{1, 1, "t"}};
  p.events = {{"cpu-clock", "nanoseconds"}};
  p.counts = {{0, 0, 3, 1, 100}, {0, 0, 0, 1, 100}};
  const std::string page = artifact_dir() + "/flame-recursion.html";
  write_page(p, page);
  const PageRun run = drive_page(page, "--sort --search '^a$'");
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  EXPECT_EQ(run.get("total_desc_shares"), "100.00|50.00") << run.out;
  EXPECT_EQ(run.get("self_desc_shares"), "50.00|50.00") << run.out;
  EXPECT_EQ(run.get("search_total"), "100.00") << run.out;
  EXPECT_EQ(run.get("search_self"), "50.00") << run.out;
}

// Two events in one file: the page offers both and, with the other one picked, totals its
// periods and samples as perf script lists them.
TEST(FlameBrowserE2E, EventFilterTotalsTheOtherEvent) {
  REQUIRE_BROWSER();
  static const test::e2e::Recording two = [] {
    test::e2e::Recording r;
    std::string err;
    const std::string w = test::e2e::workload("spin", &err);
    if (w.empty()) {
      r.error = err;
      return r;
    }
    const std::string path = test::e2e::scratch_dir() + "/flame-two-events.data";
    return test::e2e::record_with_perf(fmt::format("timeout 60 perf record -q -e cpu-clock -e page-faults -g -o {} -- {} 0.3",
                                                   shell_quote(path), shell_quote(w)),
                                       path);
  }();
  TPERF_REQUIRE_RECORDING(rec, two);
  const std::string page = artifact_dir() + "/flame-two-events.html";
  const auto made = test::e2e::run(fmt::format("{} flame -i {} -o {}", TPERF_BINARY, shell_quote(rec.path), page));
  ASSERT_EQ(made.status, 0) << made.err;
  // "         1 page-faults: " per sample: period and event.
  const auto listed = test::e2e::run(fmt::format("perf script -i {} -F event,period 2>/dev/null", shell_quote(rec.path)));
  ASSERT_EQ(listed.status, 0);
  std::map<std::string, std::pair<double, double>> per_event;  // name -> (periods, samples)
  {
    std::istringstream in(listed.out);
    double period = 0;
    std::string event;
    while (in >> period >> event) {
      if (!event.empty() && event.back() == ':') event.pop_back();
      per_event[event].first += period;
      per_event[event].second += 1;
    }
  }
  ASSERT_TRUE(per_event.count("page-faults") && per_event.count("cpu-clock")) << listed.out.substr(0, 500);
  const PageRun run = drive_page(page, "--event page-faults");
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  for (const auto& e : run.page_errors) ADD_FAILURE() << "page error: " << e;
  // cpu-clock has the most samples, so the page opens on it.
  EXPECT_EQ(run.num("total"), per_event.at("cpu-clock").first) << run.out;
  ASSERT_EQ(run.get("event_offered"), "1") << run.out;
  EXPECT_EQ(run.num("event_total"), per_event.at("page-faults").first) << run.out;
  EXPECT_EQ(run.num("event_samples"), per_event.at("page-faults").second) << run.out;
  EXPECT_GT(run.num("event_painted"), 1000) << run.out;
}

// ~100k distinct stacks and 10M samples, made up deterministically: the page must load, build its
// tree and draw within a generous bound (a smoke check that nothing is quadratic, not a benchmark).
analysis::Profile large_profile(size_t stacks, size_t functions) {
  analysis::Profile p;
  p.events = {{"cpu-clock", "nanoseconds"}};
  for (int t = 0; t < 8; ++t) p.threads.push_back({1000 + t / 4, 1000 + t, fmt::format("worker-{}", t)});
  p.mappings.push_back({"/usr/bin/big", "big", "", 0x400000, 0x800000, 0, false});
  for (size_t f = 0; f < functions; ++f) {
    p.functions.push_back({fmt::format("ns::module{}::function_{}(int, std::vector<int> const&)", f % 37, f), ""});
    analysis::ProfileFrame fr;
    fr.function = static_cast<uint32_t>(f);
    fr.mapping = 0;
    fr.address = 0x400000 + f * 16;
    fr.kernel = f % 10 == 9;
    fr.inlined = f % 10 == 3;
    p.frames.push_back(fr);
  }
  uint64_t seed = 12345;
  auto next = [&] {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return seed >> 33;
  };
  for (size_t s = 0; s < stacks; ++s) {
    analysis::ProfileStackNode n;
    // Mostly extend a recent stack (deep chains), sometimes start at a random one.
    if (s < 16) {
      n.parent = analysis::kNoIndex;
    } else {
      n.parent = static_cast<uint32_t>(next() % 4 == 0 ? next() % s : s - 1 - next() % std::min<size_t>(s, 64));
    }
    n.frame = static_cast<uint32_t>(next() % functions);
    n.depth = n.parent == analysis::kNoIndex ? 0 : p.stacks[n.parent].depth + 1;
    p.stacks.push_back(n);
    const uint64_t samples = 1 + next() % 199;  // ~100 on average: ~10M in all
    p.counts.push_back({static_cast<uint32_t>(next() % 8), 0, static_cast<uint32_t>(s), samples, samples * 250000});
  }
  return p;
}

TEST(FlameBrowserE2E, LargeProfileRendersInSeconds) {
  REQUIRE_BROWSER();
  const analysis::Profile p = large_profile(100000, 5000);
  uint64_t samples = 0;
  for (const auto& c : p.counts) samples += c.samples;
  ASSERT_GT(samples, 9000000u);
  const std::string page = artifact_dir() + "/flame-large.html";
  {
    output::FlamePageOptions options;
    options.title = "large synthetic profile";
    const std::string html = output::flame_page_html(p, options);
    FILE* f = std::fopen(page.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fwrite(html.data(), 1, html.size(), f);
    std::fclose(f);
    // The stack table, not a record per sample: a few MB for 10M samples.
    EXPECT_LT(html.size(), 12u << 20);
  }
  const std::string shot = artifact_dir() + "/flame-large.png";
  const PageRun run = drive_page(page, "--search 'function_4[0-9]\\(' --sort --screenshot " + shell_quote(shot));
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  for (const auto& e : run.page_errors) ADD_FAILURE() << "page error: " << e;
  EXPECT_GT(run.num("nodes"), 90000) << run.out;
  EXPECT_GT(run.num("drawn"), 100) << run.out;
  EXPECT_GT(run.num("painted"), 10000) << run.out;
  // From navigation to the first drawing done; a few hundred ms on a laptop.
  EXPECT_LT(run.num("load_ms"), 15000) << run.out;
  EXPECT_TRUE(non_increasing(numbers(run.get("self_desc"))));
  EXPECT_GT(run.num("search_highlighted"), 0) << run.out;
  std::printf("large page: %s, load %s ms, %s merged nodes, %s drawn\n", page.c_str(), run.get("load_ms").c_str(),
              run.get("nodes").c_str(), run.get("drawn").c_str());
}


// ---- the timeline -------------------------------------------------------------------------

// One sample of `perf script -F tid,time,period,ip,sym --ns`: its thread, time, period and the
// innermost frame's symbol.
struct TimedSample {
  std::string tid;
  uint64_t time = 0;
  uint64_t period = 0;
  std::string leaf;
};

std::vector<TimedSample> timed_samples(const std::string& script) {
  std::vector<TimedSample> out;
  std::istringstream in(script);
  std::string line;
  bool want_leaf = false;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line[0] != '\t') {
      // "  20456 13352.674261373:     250000"
      std::istringstream f(line);
      TimedSample s;
      std::string when;
      f >> s.tid >> when >> s.period;
      if (!when.empty() && when.back() == ':') when.pop_back();
      if (!test::e2e::parse_seconds_ns(when, &s.time)) continue;
      out.push_back(s);
      want_leaf = true;
    } else if (want_leaf && !out.empty()) {
      // "\t            1187 leaf"
      std::istringstream f(line);
      std::string ip;
      f >> ip >> out.back().leaf;
      want_leaf = false;
    }
  }
  return out;
}

// Dragging across the timeline selects a range of buckets; the page then counts exactly the
// samples whose bucket (time - start) / width is in it. The oracle: perf script's samples with
// their time stamps (--ns), put in buckets by that rule, and their periods.
TEST(FlameTimelineBrowserE2E, RangeTotalsArePerfScriptsSamplesInTheRange) {
  REQUIRE_BROWSER();
  static const test::e2e::Recording two_threads = [] {
    test::e2e::Recording r;
    std::string err;
    const std::string w = test::e2e::workload("spin", &err);
    if (w.empty()) {
      r.error = err;
      return r;
    }
    const std::string path = test::e2e::scratch_dir() + "/flame-timeline-spin.data";
    return test::e2e::record_with_perf(
        fmt::format("timeout 60 perf record -q -e cpu-clock -g -o {} -- {} 0.6", shell_quote(path), shell_quote(w)), path);
  }();
  TPERF_REQUIRE_RECORDING(rec, two_threads);
  const std::string page = artifact_dir() + "/flame-timeline-spin.html";
  const auto made = test::e2e::run(fmt::format("{} flame -i {} -o {}", TPERF_BINARY, shell_quote(rec.path), page));
  ASSERT_EQ(made.status, 0) << made.err;
  test::e2e::KeepOnFailure keep({rec.path, page});

  const auto script =
      test::e2e::run(fmt::format("perf script -i {} -F tid,time,period,ip,sym --ns 2>/dev/null", shell_quote(rec.path)));
  ASSERT_EQ(script.status, 0);
  const std::vector<TimedSample> samples = timed_samples(script.out);
  ASSERT_GT(samples.size(), 200u) << script.out.substr(0, 2000);
  std::map<std::string, uint64_t> per_tid;
  uint64_t first = UINT64_MAX, all_periods = 0;
  for (const auto& s : samples) {
    first = std::min(first, s.time);
    per_tid[s.tid]++;
    all_periods += s.period;
  }
  ASSERT_EQ(per_tid.size(), 2u) << "the workload's two threads";
  const std::string tid = per_tid.rbegin()->first;  // the worker

  const std::string shot = artifact_dir() + "/flame-timeline-spin.png";
  fs::remove(shot);
  const PageRun run = drive_page(page, fmt::format("--timeline --range 250,700 --range-thread {} --search '^leaf$' --screenshot {}",
                                                   tid, shell_quote(shot)));
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  for (const auto& e : run.page_errors) ADD_FAILURE() << "page error: " << e;
  ASSERT_EQ(run.get("tl_present"), "1") << run.out;
  // Bucket 0 starts at the first sample; 1000 buckets over the span.
  EXPECT_EQ(run.get("tl_start"), std::to_string(first)) << run.out;
  EXPECT_EQ(run.num("tl_buckets"), 1000) << run.out;
  EXPECT_EQ(run.get("tl_states"), "0") << "a cpu-clock recording has no switch data";
  // A lane for each thread of the workload.
  std::set<std::string> lane_tids;
  {
    std::istringstream in(run.out);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("tl_lane=", 0) == 0) lane_tids.insert(line.substr(8, line.find('|') - 8));
    }
  }
  std::set<std::string> script_tids;
  for (const auto& [t, n] : per_tid) script_tids.insert(t);
  EXPECT_EQ(lane_tids, script_tids) << run.out;

  // The range the drag made: the buckets under the mouse (a pixel holds about one bucket).
  const auto range = numbers(run.get("range"));
  ASSERT_EQ(range.size(), 2u) << run.out;
  EXPECT_NEAR(range[0], 250, 1) << run.out;
  EXPECT_NEAR(range[1], 700, 1) << run.out;
  const auto width = static_cast<uint64_t>(run.num("tl_width"));
  ASSERT_GT(width, 0u);
  uint64_t in_range = 0, in_range_periods = 0, in_range_tid = 0, leaf_periods = 0;
  for (const auto& s : samples) {
    const uint64_t b = (s.time - first) / width;
    if (b < range[0] || b > range[1]) continue;
    ++in_range;
    in_range_periods += s.period;
    in_range_tid += s.tid == tid;
    if (s.leaf == "leaf") leaf_periods += s.period;
  }
  ASSERT_GT(in_range, 50u);
  ASSERT_LT(in_range, samples.size());
  EXPECT_EQ(run.num("range_samples"), in_range) << run.out;
  EXPECT_EQ(run.num("range_total"), in_range_periods) << run.out;
  EXPECT_EQ(run.num("range_thread_samples"), in_range_tid) << run.out;
  EXPECT_GT(run.num("range_painted"), 1000) << run.out;
  // The range in times from the start, as the page names it.
  EXPECT_EQ(run.get("range_info").rfind("range ", 0), 0u) << run.get("range_info");
  // The search's self share is of the samples in the range: leaf innermost in perf script.
  EXPECT_NEAR(run.num("search_self"), 100.0 * static_cast<double>(leaf_periods) / static_cast<double>(in_range_periods), 0.006)
      << run.out;
  // Reset: the whole recording again.
  EXPECT_EQ(run.get("range_after_reset"), "null") << run.out;
  EXPECT_EQ(run.num("reset_total"), all_periods) << run.out;
  ASSERT_TRUE(fs::exists(shot));
  std::printf("timeline page: %s\nscreenshot: %s\n", page.c_str(), shot.c_str());
}

// An off-CPU recording of the workload with known waits (tperf record --off-cpu -g, the
// tracepoint way: thread states come from sched_switch; the BPF way keeps totals only): the
// sleeper's lane shows sleeping bands over its 200 ms sleep, in the plain, --off-cpu and
// --wall-clock pages, and a range selects on each.
TEST(FlameTimelineBrowserE2E, OffCpuRecordingShowsTheSleep) {
  REQUIRE_BROWSER();
  TPERF_REQUIRE_PERF();
  ASSERT_EQ(test::e2e::ensure_tracefs(), "") << "set-up failed (sched:sched_switch needs tracefs)";
  std::string err;
  const std::string bin = test::e2e::workload("offcpu_waits", &err);
  ASSERT_FALSE(bin.empty()) << "set-up failed: " << err;
  const std::string data = test::e2e::scratch_dir() + "/flame-timeline-offcpu.data";
  const auto recorded = test::e2e::run(fmt::format("{} record --off-cpu --off-cpu-way=tracepoint -g -o {} -- {}", TPERF_BINARY, shell_quote(data), shell_quote(bin)));
  ASSERT_EQ(recorded.status, 0) << recorded.err;
  test::e2e::KeepOnFailure keep({data});
  // The workload's own measure of its sleep ("sleep_200ms 200123456").
  double slept = 0;
  {
    std::istringstream in(recorded.out);
    std::string name;
    double ns = 0;
    while (in >> name >> ns) {
      if (name == "sleep_200ms") slept = ns;
    }
  }
  ASSERT_GE(slept, 199e6) << recorded.out;

  for (const std::string mode : {"", "--off-cpu", "--wall-clock"}) {
    SCOPED_TRACE(mode.empty() ? "plain page" : mode);
    const std::string name = mode.empty() ? "plain" : mode.substr(2);
    const std::string page = artifact_dir() + "/flame-timeline-offcpu-" + name + ".html";
    const auto made = test::e2e::run(fmt::format("{} flame {} -i {} -o {}", TPERF_BINARY, mode, shell_quote(data), page));
    ASSERT_EQ(made.status, 0) << made.err;
    keep.add(page);
    const std::string shot = artifact_dir() + "/flame-timeline-offcpu-" + name + ".png";
    const PageRun run = drive_page(page, "--timeline --range 50,400 --screenshot " + shell_quote(shot));
    ASSERT_EQ(run.status, 0) << run.out << run.err;
    for (const auto& e : run.page_errors) ADD_FAILURE() << "page error: " << e;
    EXPECT_EQ(run.get("tl_states"), "1") << run.out;
    // Lanes "tid|label|sleeping ns|runnable ns|sleeping pixel columns".
    std::map<std::string, std::vector<std::string>> lanes;  // comm -> fields
    {
      std::istringstream in(run.out);
      std::string line;
      while (std::getline(in, line)) {
        if (line.rfind("tl_lane=", 0) != 0) continue;
        std::vector<std::string> f;
        std::istringstream fields(line.substr(8));
        std::string v;
        while (std::getline(fields, v, '|')) f.push_back(v);
        ASSERT_EQ(f.size(), 5u) << line;
        lanes[f[1].substr(0, f[1].rfind('-'))] = f;
      }
    }
    // The waiting threads have switches; the spinner samples (an idle machine may never switch
    // it out, so the --off-cpu page, which has only switches, may have no lane for it).
    for (const char* comm : {"sleeper", "reader", "writer"}) EXPECT_TRUE(lanes.count(comm)) << comm << "\n" << run.out;
    ASSERT_TRUE(lanes.count("sleeper")) << run.out;
    const double sleeping_ns = std::stod(lanes["sleeper"][2]);
    const double sleeping_px = std::stod(lanes["sleeper"][4]);
    // Its off-CPU sleeping time is the measured sleep (within 5%, as the off-CPU report's), and
    // the bands drawn for it cover as much time, to a few pixels.
    EXPECT_NEAR(sleeping_ns, slept, 0.05 * slept) << run.out;
    const double ns_per_px = run.num("tl_ns_per_px");
    EXPECT_NEAR(sleeping_px * ns_per_px, slept, std::max(0.05 * slept, 3 * ns_per_px)) << run.out;
    // The spinner spins: it is seldom sleeping.
    if (mode != "--off-cpu") {
      ASSERT_TRUE(lanes.count("spinner")) << run.out;
      EXPECT_LT(std::stod(lanes["spinner"][2]), 0.1 * slept) << run.out;
    }
    // A range works with these weights too: something in it, less than the whole.
    EXPECT_NE(run.get("range"), "") << run.out;
    EXPECT_GT(run.num("range_total"), 0) << run.out;
    EXPECT_LE(run.num("range_total"), run.num("total")) << run.out;
    EXPECT_EQ(run.num("reset_total"), run.num("total")) << run.out;

    // Off-CPU time counts where it was spent: a range inside the sleep (60 to 120 ms from the
    // start; the sleeper starts sleeping in the first milliseconds) holds, for the sleeper, as
    // many nanoseconds as the range is long.
    if (mode.empty()) continue;
    const double width = run.num("tl_width");
    ASSERT_GT(width, 0);
    const auto b0 = static_cast<int>(std::ceil(60e6 / width)), b1 = static_cast<int>(120e6 / width);
    const PageRun inside = drive_page(page, fmt::format("--timeline --range {},{} --range-thread {}", b0, b1, lanes["sleeper"][0]));
    ASSERT_EQ(inside.status, 0) << inside.out << inside.err;
    const auto range = numbers(inside.get("range"));
    ASSERT_EQ(range.size(), 2u) << inside.out;
    EXPECT_NEAR(range[0], b0, 1) << inside.out;
    EXPECT_EQ(inside.num("range_thread_total"), (range[1] + 1 - range[0]) * width) << inside.out;
  }
}

// The page's own arithmetic on a hand-built timeline with folded cells (the page-size bound):
// threads 0 (tid 10) and 1 (tid 11), one stack; samples (time, count, weight): 1000 c0 5,
// 1099 c0 5, 1100 c1 7, 1150 c0 5, 1999 c1 7 over 10 buckets of 100 ns; a budget of 3 cells
// keeps 1 per bucket, so bucket 1 keeps c1 (7) and folds c0 (1 sample, 5). Buckets 1..2 then
// total 12 (2 samples), 5 of them (1 sample) thread 10's, without a stack.
TEST(FlameTimelineBrowserE2E, FoldedCellsCountInTheRange) {
  REQUIRE_BROWSER();
  analysis::Profile p;
  p.functions = {{"f", ""}};
  p.frames.resize(1);
  p.frames[0].function = 0;
  p.stacks = {{analysis::kNoIndex, 0, 0}};
  p.threads = {{10, 10, "main"}, {10, 11, "worker"}};
  p.events = {{"cpu-clock", "nanoseconds"}};
  p.counts = {{0, 0, 0, 3, 15}, {1, 0, 0, 2, 14}};
  p.samples = {{1000, 0, 0, 0, 5, 0}, {1099, 0, 0, 0, 5, 0}, {1100, 1, 0, 0, 7, 1}, {1150, 0, 0, 0, 5, 0}, {1999, 1, 0, 0, 7, 1}};
  p.first_time = 1000;
  p.last_time = 1999;
  const std::string page = artifact_dir() + "/flame-timeline-folded.html";
  {
    output::FlamePageOptions options;
    options.timeline.buckets = 10;
    options.timeline.min_buckets = 10;
    options.timeline.max_cells = 3;
    const std::string html = output::flame_page_html(p, options);
    FILE* f = std::fopen(page.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fwrite(html.data(), 1, html.size(), f);
    std::fclose(f);
  }
  const PageRun run = drive_page(page, "--timeline --range 1,2 --range-thread 10");
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  for (const auto& e : run.page_errors) ADD_FAILURE() << "page error: " << e;
  EXPECT_EQ(run.num("total"), 29) << run.out;
  EXPECT_EQ(run.get("range"), "1,2") << run.out;
  EXPECT_EQ(run.num("range_total"), 12) << run.out;
  EXPECT_EQ(run.num("range_samples"), 2) << run.out;
  EXPECT_EQ(run.num("range_thread_total"), 5) << run.out;
  EXPECT_EQ(run.num("range_thread_samples"), 1) << run.out;
  EXPECT_NE(run.get("range_info").find("41.67% of it without stacks"), std::string::npos) << run.get("range_info");
  EXPECT_EQ(run.num("reset_total"), 29) << run.out;
}

// The page has a timeline by default (the samples' times), none with --no-timeline.
TEST(FlameCommandE2E, NoTimelineLeavesItOut) {
  TPERF_REQUIRE_PROGRAM("python3");
  TPERF_REQUIRE_RECORDING(rec, spin_recording());
  test::TempDir dir;
  const std::string script =
      "import json,re,sys\n"
      "h=open(sys.argv[1],encoding='utf-8').read()\n"
      "d=json.loads(re.search(r'<script type=\"application/json\" id=\"tperf-profile\">(.*?)</script>',h,re.S).group(1))\n"
      "t=d.get('timeline')\n"
      "print('none' if t is None else '%d %d' % (t['buckets'], sum(t['cells']['samples'])), sum(d['counts']['samples']))\n";
  for (const std::string flag : {"", "--no-timeline"}) {
    const std::string page = dir.file("p" + flag + ".html");
    const auto r = test::e2e::run(fmt::format("{} flame {} -i {} -o {}", TPERF_BINARY, flag, shell_quote(rec.path), page));
    ASSERT_EQ(r.status, 0) << r.err;
    int status = -1;
    const std::string out = python(script, page, &status);
    ASSERT_EQ(status, 0) << out;
    std::istringstream in(out);
    std::string first, second, third;
    in >> first >> second;
    if (flag.empty()) {
      in >> third;
      // 1000 buckets whose cells hold every sample of the stack table.
      EXPECT_EQ(first, "1000") << out;
      EXPECT_EQ(second, third) << out;
    } else {
      EXPECT_EQ(first, "none") << out;
    }
  }
}

}  // namespace
}  // namespace tperf
