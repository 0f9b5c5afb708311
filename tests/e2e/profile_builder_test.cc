// The stack table (analysis::build_profile) of real recordings against perf 6.1: every sample's
// stack as `perf script` prints it (comm, tid, the symbols of its chain leaf first), counted with
// its periods, equals the table's counts; the self periods per symbol equal
// `perf report --no-children -s sym`'s. Recorded with the system perf at test time.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <time.h>

#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "analysis/profile_builder.h"
#include "e2e/recording_util.h"
#include "test_util.h"

namespace tperf::test::e2e {
namespace {

struct Totals {
  uint64_t samples = 0;
  uint64_t period = 0;
  bool operator==(const Totals&) const = default;
};
using StackKey = std::tuple<int32_t, std::string, std::string>;  // tid, comm, "leaf;caller;..."

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

// `perf script -F comm,tid,period,ip,sym`: a header line "comm tid period", then one line per
// frame "\tIP SYM", a blank line after each sample; without callchains one line
// "comm tid period ip sym" per sample (the workload's symbols have no spaces).
std::map<StackKey, Totals> perf_stacks(const std::string& text, bool chains) {
  std::map<StackKey, Totals> out;
  std::istringstream in(text);
  std::string line, comm, stack;
  int32_t tid = -1;
  uint64_t period = 0;
  bool open = false;
  auto close = [&] {
    if (!open) return;
    Totals& t = out[{tid, comm, stack}];
    ++t.samples;
    t.period += period;
    open = false;
  };
  while (std::getline(in, line)) {
    if (line.empty()) {
      close();
      continue;
    }
    if (line[0] == '\t') {
      std::string f = trim(line);
      const size_t sp = f.find(' ');
      std::string sym = sp == std::string::npos ? "" : f.substr(sp + 1);
      stack += (stack.empty() ? "" : ";") + sym;
      continue;
    }
    close();
    std::string h = trim(line);
    if (!chains) {
      const size_t s1 = h.rfind(' ');
      stack = h.substr(s1 + 1);
      h = trim(h.substr(0, trim(h.substr(0, s1)).rfind(' ')));
    } else {
      stack.clear();
    }
    const size_t p = h.rfind(' ');
    period = std::stoull(h.substr(p + 1));
    h = trim(h.substr(0, p));
    const size_t t = h.rfind(' ');
    tid = std::stoi(h.substr(t + 1));
    comm = trim(h.substr(0, t));
    open = true;
  }
  close();
  return out;
}

std::map<StackKey, Totals> table_stacks(const analysis::Profile& p) {
  std::map<StackKey, Totals> out;
  for (const analysis::ProfileCount& c : p.counts) {
    std::string stack;
    for (uint32_t s = c.stack; s != analysis::kNoIndex; s = p.stacks[s].parent) {
      stack += (stack.empty() ? "" : ";") + p.functions[p.frames[p.stacks[s].frame].function].name;
    }
    Totals& t = out[{p.threads[c.thread].tid, p.threads[c.thread].comm, stack}];
    t.samples += c.samples;
    t.period += c.weight;
  }
  return out;
}

// perf report --no-children -s sym --show-total-period -q: "  12.34%  123456  [.] name".
std::map<std::string, uint64_t> perf_self_by_symbol(const std::string& text) {
  std::map<std::string, uint64_t> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string pct, level;
    uint64_t period = 0;
    if (!(f >> pct >> period >> level)) continue;
    std::string name;
    std::getline(f, name);
    name = trim(name);
    if (name.starts_with("0x")) continue;  // no symbol: perf keys such entries by address
    out[name] += period;
  }
  return out;
}

TEST(ProfileBuilderE2E, StacksAndSelfPeriodsEqualPerfs) {
  TPERF_REQUIRE_PERF();
  std::string error;
  const std::string spin = workload("spin", &error);
  ASSERT_FALSE(spin.empty()) << "set-up failed: " << error;
  for (const char* how : {"-e cpu-clock -g", "-e cpu-clock", "-e cpu-clock -c 100000 -g"}) {
    SCOPED_TRACE(how);
    const std::string data = scratch_dir() + "/profile.data";
    KeepOnFailure keep({data});
    CommandResult rec = run(fmt::format("perf record -q {} -o {} -- {} 0.3", how, shell_quote(data), shell_quote(spin)));
    ASSERT_EQ(rec.status, 0) << "set-up failed: perf record: " << rec.err;
    // perf finds the recording's [vdso] in its build-id cache (perf record put it there); tperf
    // reads this kernel's own when the build ids agree.
    CommandResult script = run(fmt::format("perf script -i {} -F comm,tid,period,ip,sym", shell_quote(data)));
    ASSERT_EQ(script.status, 0) << script.err;
    CommandResult report = run(fmt::format(
        "perf report -i {} --stdio --no-children -s sym -g none --show-total-period -q", shell_quote(data)));
    ASSERT_EQ(report.status, 0) << report.err;

    analysis::ProfileOptions options;
    analysis::Profile profile = analysis::build_profile(data, options);
    EXPECT_TRUE(profile.problems.empty());
    const auto expected = perf_stacks(script.out, std::string(how).find("-g") != std::string::npos);
    ASSERT_GE(expected.size(), 2u) << "perf script printed too little:\n" << script.out.substr(0, 2000);
    const auto got = table_stacks(profile);
    EXPECT_EQ(got.size(), expected.size());
    for (const auto& [key, totals] : expected) {
      auto it = got.find(key);
      if (it == got.end()) {
        ADD_FAILURE() << "stack missing from the table: tid " << std::get<0>(key) << " " << std::get<1>(key) << " "
                      << std::get<2>(key);
        continue;
      }
      EXPECT_EQ(it->second.samples, totals.samples) << std::get<2>(key);
      EXPECT_EQ(it->second.period, totals.period) << std::get<2>(key);
    }
    for (const auto& [key, totals] : got) {
      if (!expected.count(key)) ADD_FAILURE() << "stack perf does not show: " << std::get<1>(key) << " " << std::get<2>(key);
    }
    // Self periods per symbol: the innermost frame of each stack.
    std::map<std::string, uint64_t> self;
    for (const analysis::ProfileCount& c : profile.counts) {
      self[profile.functions[profile.frames[profile.stacks[c.stack].frame].function].name] += c.weight;
    }
    const auto perf_self = perf_self_by_symbol(report.out);
    ASSERT_FALSE(perf_self.empty()) << report.out;
    for (const auto& [name, period] : perf_self) EXPECT_EQ(self[name], period) << name;
    // The workload's own functions are there, with the time it spent.
    EXPECT_GT(self["leaf"], 0u);
    ASSERT_FALSE(profile.events.empty());
    EXPECT_EQ(profile.events[0].unit, "nanoseconds");
    EXPECT_GT(profile.last_time, profile.first_time);
  }
}

TEST(ProfileBuilderE2E, TimedSamplesAndFiltersKeepEverySample) {
  TPERF_REQUIRE_PERF();
  std::string error;
  const std::string spin = workload("spin", &error);
  ASSERT_FALSE(spin.empty()) << "set-up failed: " << error;
  const std::string data = scratch_dir() + "/profile-timed.data";
  KeepOnFailure keep({data});
  auto wall_now = [] {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
  };
  const int64_t before = wall_now();
  CommandResult rec = run(fmt::format("perf record -q -e cpu-clock -g -o {} -- {} 0.2", shell_quote(data), shell_quote(spin)));
  const int64_t after = wall_now();
  ASSERT_EQ(rec.status, 0) << "set-up failed: perf record: " << rec.err;
  CommandResult tids = run(fmt::format("perf script -i {} -F tid,time", shell_quote(data)));
  ASSERT_EQ(tids.status, 0) << tids.err;
  std::map<int32_t, uint64_t> per_tid;
  std::vector<uint64_t> times;
  {
    std::istringstream in(tids.out);
    int32_t tid;
    std::string t;
    while (in >> tid >> t) {
      ++per_tid[tid];
      t.pop_back();  // "123.456789:"
      const size_t dot = t.find('.');
      times.push_back(std::stoull(t.substr(0, dot)) * 1000000000ull + std::stoull(t.substr(dot + 1)) * 1000);
    }
  }
  ASSERT_GE(per_tid.size(), 2u) << tids.out.substr(0, 1000);

  analysis::ProfileOptions options;
  options.timed_samples = true;
  analysis::Profile all = analysis::build_profile(data, options);
  ASSERT_EQ(all.samples.size(), times.size());
  // The first sample's wall-clock time lies within the perf record run (the file's mtime less
  // the samples' span, when it has no CLOCK_DATA).
  EXPECT_GE(all.wall_time_ns, before);
  EXPECT_LE(all.wall_time_ns, after);
  for (size_t i = 0; i < times.size(); ++i) {
    // perf script prints microseconds.
    EXPECT_EQ(all.samples[i].time / 1000, times[i] / 1000) << i;
  }
  // --tid: only that thread's samples.
  const int32_t one = per_tid.rbegin()->first;
  options.tids = {one};
  analysis::Profile only = analysis::build_profile(data, options);
  uint64_t n = 0;
  for (const auto& c : only.counts) {
    EXPECT_EQ(only.threads[c.thread].tid, one);
    n += c.samples;
  }
  EXPECT_EQ(n, per_tid[one]);
}

}  // namespace
}  // namespace tperf::test::e2e
