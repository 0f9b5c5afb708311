// Off-CPU profiles end to end: a workload with known waits (tests/e2e/workloads/offcpu_waits.c:
// 200 ms asleep in sleep_200ms, 300 ms blocked on a pipe in wait_on_pipe, 300 ms asleep in
// write_after_300ms, 500 ms of CPU in spin_500ms) recorded by `tperf record --off-cpu -g` and by
// the system perf's `-e sched:sched_switch -g`; `tperf report --off-cpu` must find those times per
// function (within 5% of each wait as the workload measured it, which is the nominal time plus
// whatever lateness the machine added to the wake-up), and count the switches of perf's file as
// `perf report -n` counts its samples (per comm/dso/sym entry, per thread, per symbol) under the
// same folded stacks.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/profile_builder.h"
#include "e2e/recording_util.h"
#include "test_util.h"

namespace tperf::test::e2e {
namespace {

const std::string kTperf = TPERF_BINARY;

#define REQUIRE_WORKLOAD(var, name)                      \
  std::string var##_error_;                              \
  const std::string var = workload(name, &var##_error_); \
  ASSERT_FALSE(var.empty()) << "set-up failed: " << var##_error_

// One event's section of a `report --stdio --children --sort sym -g none` text: its total
// (the "Event count" line) and each symbol's Children percentage.
struct Section {
  uint64_t samples = 0;
  uint64_t total = 0;
  std::map<std::string, double> children_pct;
  // The time (or period) of `sym` and everything it called.
  double inclusive(const std::string& sym) const {
    auto it = children_pct.find(sym);
    return it == children_pct.end() ? 0.0 : it->second * static_cast<double>(total) / 100.0;
  }
};

std::map<std::string, Section> parse_children_report(const std::string& text) {
  std::map<std::string, Section> out;
  static const std::regex head(R"(^# Samples: ([0-9]+)\S*\s+of event '([^']+)')");
  static const std::regex count(R"(^# Event count \(approx\.\): ([0-9]+))");
  static const std::regex row(R"(^\s+([0-9.]+)%\s+([0-9.]+)%\s+\[.\]\s+(\S+))");
  std::istringstream in(text);
  std::string line;
  Section* cur = nullptr;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, head)) {
      cur = &out[m[2]];
      cur->samples = std::stoull(m[1]);
    } else if (cur && std::regex_search(line, m, count)) {
      cur->total = std::stoull(m[1]);
    } else if (cur && std::regex_search(line, m, row)) {
      cur->children_pct[m[3]] = std::stod(m[1]);
    }
  }
  return out;
}

// Lines "<samples> <rest of the row>" of a `report -n --no-children -g none` text, with the
// percentage column dropped: the counts per entry, whatever the entries weigh.
std::multiset<std::string> count_rows(const std::string& text) {
  std::multiset<std::string> rows;
  static const std::regex row(R"(^\s+[0-9.]+%\s+([0-9]+)\s+(.*\S)\s*$)");
  std::istringstream in(text);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, row)) rows.insert(fmt::format("{} {}", m[1].str(), m[2].str()));
  }
  return rows;
}

// The stacks of a `report -g folded,0` text ("12.34% a;b;c" lines), percentages dropped.
std::multiset<std::string> folded_stacks(const std::string& text) {
  std::multiset<std::string> stacks;
  static const std::regex line(R"(^[0-9.]+% (.+)$)");
  std::istringstream in(text);
  std::string l;
  std::smatch m;
  while (std::getline(in, l)) {
    if (std::regex_search(l, m, line)) stacks.insert(m[1]);
  }
  return stacks;
}

std::string show(const std::multiset<std::string>& rows) {
  std::string s;
  for (const auto& r : rows) s += r + "\n";
  return s;
}

constexpr double kMs = 1e6;

// The waits as the workload measured them (its "name ns" lines): at least the nominal 200 and
// 300 ms, more when the machine woke a thread late. The writer sleeps until 300 ms after the
// read began, from the moment it saw that start: a writer the loaded machine ran late sleeps
// less (295.6 ms once, under ASan), so its floor is lower; its own measure is what tperf's
// off-CPU time is held to.
using Waits = std::map<std::string, double>;
Waits measured_waits(const std::string& out) {
  Waits w;
  std::istringstream in(out);
  std::string name;
  double ns;
  while (in >> name >> ns) w[name] = ns;
  return w;
}
const std::map<std::string, double> kNominal = {{"sleep_200ms", 200 * kMs}, {"wait_on_pipe", 300 * kMs},
                                                {"write_after_300ms", 250 * kMs}};

// The workload's waits, and tperf's off-CPU time in each function within 5% of them.
template <class Inclusive>
void expect_known_waits(const Waits& waits, const Inclusive& inclusive, const std::string& what) {
  for (const auto& [name, nominal] : kNominal) {
    auto it = waits.find(name);
    ASSERT_NE(it, waits.end()) << "the workload did not say how long " << name << " waited";
    EXPECT_GE(it->second, nominal - 1 * kMs) << name;
    EXPECT_NEAR(inclusive(name), it->second, 0.05 * it->second) << name << " (nominal " << nominal / kMs << " ms)\n" << what;
  }
}
void expect_known_waits(const Waits& waits, const Section& off, const std::string& what) {
  expect_known_waits(waits, [&](const std::string& n) { return off.inclusive(n); }, what);
}

TEST(OffCpuE2E, TperfRecordFindsTheKnownWaits) {
  TPERF_REQUIRE_PERF();
  ASSERT_EQ(ensure_tracefs(), "") << "set-up failed (sched:sched_switch needs tracefs)";
  REQUIRE_WORKLOAD(bin, "offcpu_waits");
  const std::string data = scratch_dir() + "/offcpu_tperf.data";
  KeepOnFailure keep({data});
  CommandResult r = run(fmt::format("{} record --off-cpu --off-cpu-way=tracepoint -g -o {} -- {}", kTperf,
                                    shell_quote(data), shell_quote(bin)));
  ASSERT_EQ(r.status, 0) << r.err;
  const Waits waits = measured_waits(r.out);
  EXPECT_NE(r.err.find("--off-cpu: the tracepoint way (sched:sched_switch samples with callchains + switch events): "
                       "asked for with --off-cpu-way=tracepoint"),
            std::string::npos)
      << r.err;

  const std::string opts = "--stdio --children --sort sym -g none";
  CommandResult off = run(fmt::format("{} report --off-cpu -i {} {}", kTperf, shell_quote(data), opts));
  ASSERT_EQ(off.status, 0) << off.err;
  auto sections = parse_children_report(off.out);
  ASSERT_EQ(sections.count("sched:sched_switch"), 1u) << off.out;
  EXPECT_EQ(sections.size(), 1u) << "--off-cpu shows the switches only\n" << off.out;
  expect_known_waits(waits, sections["sched:sched_switch"], off.out);
  EXPECT_NE(off.out.find("# off-CPU time from sched:sched_switch samples (TRACING_DATA layout)"), std::string::npos)
      << off.out;

  // Two passes over a stream: standard input is kept in a temporary file. It reads as the same
  // pipe-mode stream read from a file, with the intervals of the file-mode recording.
  const std::string pipe_file = scratch_dir() + "/offcpu_tperf.pipe.data";
  ASSERT_EQ(run(fmt::format("{} convert --pipe {} {}", kTperf, shell_quote(data), shell_quote(pipe_file))).status, 0);
  CommandResult from_file = run(fmt::format("{} report --off-cpu -i {} {}", kTperf, shell_quote(pipe_file), opts));
  CommandResult piped = run(fmt::format("cat {} | {} report --off-cpu -i - {}", shell_quote(pipe_file), kTperf, opts));
  ASSERT_EQ(from_file.status, 0) << from_file.err;
  ASSERT_EQ(piped.status, 0) << piped.err;
  EXPECT_EQ(piped.out, from_file.out);
  auto by_state = [](const std::string& text) {
    const size_t at = text.find("# off-CPU by state:");
    return at == std::string::npos ? std::string() : text.substr(at, text.find('\n', at) - at);
  };
  EXPECT_NE(by_state(off.out), "") << off.out;
  EXPECT_EQ(by_state(piped.out), by_state(off.out)) << piped.out;
  EXPECT_NE(piped.out.find("sched:sched_switch"), std::string::npos) << piped.out;

  // perf 6.1 reads the file without a word: the switches are an ordinary tracepoint event.
  for (const char* cmd : {"perf report --stdio", "perf script"}) {
    CommandResult p = run(fmt::format("{} -i {} >/dev/null", cmd, shell_quote(data)));
    EXPECT_EQ(p.status, 0) << cmd;
    EXPECT_EQ(p.err, "") << cmd;
  }

  // The stack table of `tperf flame --off-cpu` (and the exports): the same times, in nanoseconds.
  analysis::ProfileOptions po;
  po.off_cpu = true;
  const analysis::Profile profile = analysis::build_profile(data, po);
  std::map<std::string, uint64_t> inclusive;
  for (const analysis::ProfileCount& c : profile.counts) {
    ASSERT_LT(c.event, profile.events.size());
    EXPECT_EQ(profile.events[c.event].name, "sched:sched_switch");
    EXPECT_EQ(profile.events[c.event].unit, "nanoseconds");
    if (c.stack == analysis::kNoIndex) continue;
    std::set<std::string> names;
    for (uint32_t f : profile.frames_root_first(c.stack)) names.insert(profile.functions[profile.frames[f].function].name);
    for (const auto& n : names) inclusive[n] += c.weight;
  }
  expect_known_waits(waits, [&](const std::string& n) { return static_cast<double>(inclusive[n]); }, "flame --off-cpu");

  // `tperf collapse --off-cpu --period`: folded stacks weighed by the same times.
  {
    CommandResult folded = run(fmt::format("{} collapse --off-cpu --period -i {}", kTperf, shell_quote(data)));
    ASSERT_EQ(folded.status, 0) << folded.err;
    std::map<std::string, double> by_function;
    std::istringstream lines(folded.out);
    std::string line;
    while (std::getline(lines, line)) {
      const size_t space = line.rfind(' ');
      if (space == std::string::npos) continue;
      const double weight = std::stod(line.substr(space + 1));
      std::set<std::string> names;
      std::istringstream frames(line.substr(0, space));
      std::string frame;
      while (std::getline(frames, frame, ';')) names.insert(frame);
      for (const auto& n : names) by_function[n] += weight;
    }
    expect_known_waits(waits, [&](const std::string& n) { return by_function[n]; }, "collapse --off-cpu --period");
  }

  // Its wall-clock one (flame --wall-clock): the spin's CPU time joins the waits in one event.
  po.wall_clock = true;
  const analysis::Profile wall_profile = analysis::build_profile(data, po);
  std::map<std::string, uint64_t> wall_inclusive;
  for (const analysis::ProfileCount& c : wall_profile.counts) {
    EXPECT_EQ(wall_profile.events[c.event].name, "wall-clock (sched:sched_switch + on-CPU time)");
    if (c.stack == analysis::kNoIndex) continue;
    std::set<std::string> names;
    for (uint32_t f : wall_profile.frames_root_first(c.stack)) {
      names.insert(wall_profile.functions[wall_profile.frames[f].function].name);
    }
    for (const auto& n : names) wall_inclusive[n] += c.weight;
  }
  expect_known_waits(waits, [&](const std::string& n) { return static_cast<double>(wall_inclusive[n]); }, "flame --wall-clock");
  EXPECT_GE(static_cast<double>(wall_inclusive["spin_500ms"]), 475 * kMs);

  // The spin is on-CPU: 500 ms of cpu-clock samples (periods in ns), and no time asleep.
  CommandResult on = run(fmt::format("{} report -i {} {}", kTperf, shell_quote(data), opts));
  ASSERT_EQ(on.status, 0) << on.err;
  auto on_sections = parse_children_report(on.out);
  ASSERT_EQ(on_sections.count("cpu-clock"), 1u) << on.out;
  EXPECT_NEAR(on_sections["cpu-clock"].inclusive("spin_500ms"), 500 * kMs, 25 * kMs) << on.out;
  CommandResult asleep =
      run(fmt::format("{} report --off-cpu --state sleeping -i {} {}", kTperf, shell_quote(data), opts));
  ASSERT_EQ(asleep.status, 0) << asleep.err;
  auto asleep_sections = parse_children_report(asleep.out);
  EXPECT_LT(asleep_sections["sched:sched_switch"].inclusive("spin_500ms"), 5 * kMs) << asleep.out;
  expect_known_waits(waits, asleep_sections["sched:sched_switch"], asleep.out);

  // Wall-clock: the waits and the spin's 500 ms of CPU in one section.
  CommandResult wall = run(fmt::format("{} report --wall-clock -i {} {}", kTperf, shell_quote(data), opts));
  ASSERT_EQ(wall.status, 0) << wall.err;
  auto wall_sections = parse_children_report(wall.out);
  ASSERT_EQ(wall_sections.size(), 1u) << wall.out;
  const Section& w = wall_sections.begin()->second;
  EXPECT_EQ(wall_sections.begin()->first, "wall-clock (sched:sched_switch + on-CPU time)");
  expect_known_waits(waits, w, wall.out);
  EXPECT_GE(w.inclusive("spin_500ms"), 475 * kMs) << wall.out;
}

// The function names of a folded line's frames (its first frame, the comm, left out), once each.
std::set<std::string> folded_functions(const std::string& stack) {
  std::set<std::string> names;
  std::istringstream frames(stack);
  std::string frame;
  bool first = true;
  while (std::getline(frames, frame, ';')) {
    if (!first && !frame.empty() && frame[0] != '[') names.insert(frame);
    first = false;
  }
  return names;
}

// The BPF way: the same waits from the in-kernel totals written as perf's offcpu-time event, the
// spin on-CPU, perf 6.1 reading the file without a word, and perf script's offcpu-time samples
// (periods and stacks) adding up to what tperf aggregates from them.
TEST(OffCpuE2E, TperfRecordBpfWayFindsTheKnownWaits) {
  TPERF_REQUIRE_PERF();
  REQUIRE_WORKLOAD(bin, "offcpu_waits");
  const std::string data = scratch_dir() + "/offcpu_bpf.data";
  KeepOnFailure keep({data});
  CommandResult r = run(fmt::format("{} record --off-cpu --off-cpu-way=bpf -g -o {} -- {}", kTperf, shell_quote(data),
                                    shell_quote(bin)));
  ASSERT_EQ(r.status, 0) << r.err;
  const Waits waits = measured_waits(r.out);
  EXPECT_NE(r.err.find("tperf record: --off-cpu: the BPF way ("), std::string::npos) << r.err;

  const std::string opts = "--stdio --children --sort sym -g none";
  CommandResult off = run(fmt::format("{} report --off-cpu -i {} {}", kTperf, shell_quote(data), opts));
  ASSERT_EQ(off.status, 0) << off.err;
  auto sections = parse_children_report(off.out);
  ASSERT_EQ(sections.count("offcpu-time"), 1u) << off.out;
  EXPECT_EQ(sections.size(), 1u) << off.out;
  expect_known_waits(waits, sections["offcpu-time"], off.out);
  EXPECT_NE(off.out.find("# off-CPU time from the offcpu-time event (aggregated in the kernel by BPF)"), std::string::npos)
      << off.out;
  EXPECT_NE(off.out.find("# off-CPU by state: sleeping "), std::string::npos) << off.out;

  // Sleeping only: the waits stay, the spin's preemptions go.
  CommandResult asleep =
      run(fmt::format("{} report --off-cpu --state sleeping -i {} {}", kTperf, shell_quote(data), opts));
  ASSERT_EQ(asleep.status, 0) << asleep.err;
  auto asleep_sections = parse_children_report(asleep.out);
  expect_known_waits(waits, asleep_sections["offcpu-time"], asleep.out);
  EXPECT_LT(asleep_sections["offcpu-time"].inclusive("spin_500ms"), 5 * kMs) << asleep.out;

  // The spin is on-CPU.
  CommandResult on = run(fmt::format("{} report -i {} {}", kTperf, shell_quote(data), opts));
  ASSERT_EQ(on.status, 0) << on.err;
  auto on_sections = parse_children_report(on.out);
  ASSERT_EQ(on_sections.count("cpu-clock"), 1u) << on.out;
  EXPECT_NEAR(on_sections["cpu-clock"].inclusive("spin_500ms"), 500 * kMs, 25 * kMs) << on.out;

  // Wall-clock: waits and spin in one section.
  CommandResult wall = run(fmt::format("{} report --wall-clock -i {} {}", kTperf, shell_quote(data), opts));
  ASSERT_EQ(wall.status, 0) << wall.err;
  auto wall_sections = parse_children_report(wall.out);
  ASSERT_EQ(wall_sections.size(), 1u) << wall.out;
  EXPECT_EQ(wall_sections.begin()->first, "wall-clock (offcpu-time + on-CPU time)");
  expect_known_waits(waits, wall_sections.begin()->second, wall.out);
  EXPECT_GE(wall_sections.begin()->second.inclusive("spin_500ms"), 475 * kMs) << wall.out;

  // The stack table (flame, exports) and collapse: the same times.
  analysis::ProfileOptions po;
  po.off_cpu = true;
  const analysis::Profile profile = analysis::build_profile(data, po);
  std::map<std::string, uint64_t> inclusive;
  for (const analysis::ProfileCount& c : profile.counts) {
    EXPECT_EQ(profile.events[c.event].name, "offcpu-time");
    EXPECT_EQ(profile.events[c.event].unit, "nanoseconds");
    if (c.stack == analysis::kNoIndex) continue;
    std::set<std::string> names;
    for (uint32_t f : profile.frames_root_first(c.stack)) names.insert(profile.functions[profile.frames[f].function].name);
    for (const auto& n : names) inclusive[n] += c.weight;
  }
  expect_known_waits(waits, [&](const std::string& n) { return static_cast<double>(inclusive[n]); }, "flame --off-cpu");
  // The totals' time stamps (from ~0 << 32) are no time of the recording: the profile's span is
  // that of the cpu-clock samples, under the workload's 1.3 s or so.
  po.wall_clock = true;
  const analysis::Profile wall_profile = analysis::build_profile(data, po);
  EXPECT_GT(wall_profile.first_time, 0u);
  EXPECT_LT(wall_profile.last_time, ~uint64_t{0} << 32);
  EXPECT_LT(wall_profile.last_time - wall_profile.first_time, uint64_t{5000} * 1000000);

  CommandResult folded = run(fmt::format("{} collapse --off-cpu --period -i {}", kTperf, shell_quote(data)));
  ASSERT_EQ(folded.status, 0) << folded.err;
  std::map<std::string, uint64_t> tperf_by_function;
  uint64_t tperf_total = 0;
  {
    std::istringstream lines(folded.out);
    std::string line;
    while (std::getline(lines, line)) {
      const size_t space = line.rfind(' ');
      if (space == std::string::npos) continue;
      const uint64_t weight = std::stoull(line.substr(space + 1));
      tperf_total += weight;
      for (const auto& n : folded_functions(line.substr(0, space))) tperf_by_function[n] += weight;
    }
  }
  expect_known_waits(waits, [&](const std::string& n) { return static_cast<double>(tperf_by_function[n]); },
                     "collapse --off-cpu --period");

  // perf 6.1 reads it without a word, the offcpu-time samples as an ordinary event.
  CommandResult pr = run(fmt::format("perf report --stdio -i {}", shell_quote(data)));
  EXPECT_EQ(pr.status, 0);
  EXPECT_EQ(pr.err, "");
  EXPECT_NE(pr.out.find("of event 'offcpu-time'"), std::string::npos) << pr.out;
  CommandResult ps = run(fmt::format("perf script -i {}", shell_quote(data)));
  EXPECT_EQ(ps.status, 0);
  EXPECT_EQ(ps.err, "");
  // Its offcpu-time samples: the periods and stacks tperf aggregated.
  std::map<std::string, uint64_t> perf_by_function;
  uint64_t perf_total = 0, perf_samples = 0;
  {
    static const std::regex head(R"(^\S.*\s[0-9]+\s+[0-9.]+:\s+([0-9]+) offcpu-time:)");
    static const std::regex frame(R"(^\s+[0-9a-f]+ (\S+?)(\+0x[0-9a-f]+)? \()");
    std::istringstream lines(ps.out);
    std::string line;
    std::smatch m;
    bool in_sample = false;
    uint64_t period = 0;
    std::set<std::string> names;
    auto flush = [&]() {
      if (in_sample) {
        for (const auto& n : names) perf_by_function[n] += period;
      }
      names.clear();
      in_sample = false;
    };
    while (std::getline(lines, line)) {
      if (std::regex_search(line, m, head)) {
        flush();
        in_sample = true;
        period = std::stoull(m[1]);
        perf_total += period;
        ++perf_samples;
      } else if (in_sample && std::regex_search(line, m, frame)) {
        if (m[1].str()[0] != '[') names.insert(m[1]);
      } else if (line.empty()) {
        flush();
      }
    }
    flush();
  }
  EXPECT_GT(perf_samples, 0u) << ps.out;
  EXPECT_EQ(perf_samples, sections["offcpu-time"].samples) << off.out;
  EXPECT_EQ(perf_total, sections["offcpu-time"].total) << off.out;
  EXPECT_EQ(perf_total, tperf_total);
  EXPECT_EQ(perf_by_function, tperf_by_function);
}

TEST(OffCpuE2E, PerfSchedSwitchFileKnownWaitsAndSwitchCounts) {
  TPERF_REQUIRE_PERF();
  ASSERT_EQ(ensure_tracefs(), "") << "set-up failed (sched:sched_switch needs tracefs)";
  REQUIRE_WORKLOAD(bin, "offcpu_waits");
  const std::string data = scratch_dir() + "/offcpu_perf.data";
  KeepOnFailure keep({data});
  CommandResult r = run(fmt::format("perf record -q -e sched:sched_switch -g -o {} -- {}", shell_quote(data), shell_quote(bin)));
  ASSERT_EQ(r.status, 0) << "set-up failed: perf record: " << r.err;
  const Waits waits = measured_waits(r.out);

  // perf's per-task sched_switch never sees a switch-in (it fires in the task leaving): each
  // interval ends at the thread's next event, here its next switch-out or its exit, which for
  // these threads comes right after their wait.
  CommandResult off = run(fmt::format("{} report --off-cpu -i {} --stdio --children --sort sym -g none", kTperf, shell_quote(data)));
  ASSERT_EQ(off.status, 0) << off.err;
  auto sections = parse_children_report(off.out);
  ASSERT_EQ(sections.count("sched:sched_switch"), 1u) << off.out;
  expect_known_waits(waits, sections["sched:sched_switch"], off.out);

  // The switches per entry and per thread are perf's samples of the event.
  for (const char* sort : {"comm,dso,sym", "pid", "sym"}) {
    const std::string opts = fmt::format("--stdio -n --no-children -g none --sort {}", sort);
    CommandResult p = run(fmt::format("perf report -i {} {} 2>/dev/null", shell_quote(data), opts));
    CommandResult t = run(fmt::format("{} report --off-cpu -i {} {}", kTperf, shell_quote(data), opts));
    ASSERT_EQ(p.status, 0) << "perf report failed";
    ASSERT_EQ(t.status, 0) << t.err;
    const auto perf_rows = count_rows(p.out), tperf_rows = count_rows(t.out);
    EXPECT_FALSE(perf_rows.empty()) << p.out;
    EXPECT_EQ(show(perf_rows), show(tperf_rows)) << "--sort " << sort;
  }
  // Under each entry, the same stacks (their weights differ: samples for perf, time for tperf).
  const std::string folded = "--stdio -n --no-children -g folded,0 --sort comm,dso,sym";
  CommandResult p = run(fmt::format("perf report -i {} {} 2>/dev/null", shell_quote(data), folded));
  CommandResult t = run(fmt::format("{} report --off-cpu -i {} {}", kTperf, shell_quote(data), folded));
  ASSERT_EQ(p.status, 0) << "perf report failed";
  ASSERT_EQ(t.status, 0) << t.err;
  const auto perf_stacks = folded_stacks(p.out);
  EXPECT_FALSE(perf_stacks.empty()) << p.out;
  EXPECT_EQ(show(perf_stacks), show(folded_stacks(t.out)));
}

}  // namespace
}  // namespace tperf::test::e2e
