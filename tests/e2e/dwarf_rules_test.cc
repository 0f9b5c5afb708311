// The DWARF unwinder steps from frame to frame with each pc's unwind rules, looked up once and
// kept (DwarfUnwindOptions::cached_rules), where libdwfl's own walk looks the FDE up and runs its
// CFA program anew for every frame. The frames must be libdwfl's, sample by sample and map by
// map: both ways are run over the same perf recordings (deep recursion without frame pointers,
// through libc's qsort; a recording of another machine whose files are not here), and the cached
// way must have walked nearly every stack itself, not handed it to libdwfl.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "analysis/sample_path.h"
#include "e2e/recording_util.h"
#include "e2e/unwound_sample.h"
#include "perfdata/reader.h"
#include "session/machine.h"
#include "symbols/dwarf_unwind.h"
#include "symbols/symbolizer.h"
#include "test_util.h"

namespace tperf::test::e2e {
namespace {

struct Walked {
  std::vector<std::string> samples;  // per sample: its offset and frames (address@dso)
  size_t unwound = 0;                // samples with 2 frames or more
  size_t deepest = 0;
  symbols::DwarfUnwinder::Stats stats;
};

Walked walk_file(const std::string& path, bool cached_rules, unsigned max_stack) {
  Walked out;
  auto reader = perfdata::Reader::open(path);
  std::unique_ptr<session::Machine> machine = analysis::make_report_machine(*reader);
  symbols::Symbolizer symbolizer(*machine, {});
  symbols::DwarfUnwindOptions options;
  options.cached_rules = cached_rules;
  symbols::DwarfUnwinder unwinder(*machine, options);
  perfdata::Sample s;
  std::vector<session::CallchainFrame> frames;
  analysis::ReplayHandlers h;
  h.jobs = 1;
  h.on_sample = [&](const perfdata::Record& r, uint64_t) {
    const std::string line = unwound_sample_line(*reader, *machine, unwinder, r, max_stack, s, frames);
    EXPECT_FALSE(line.empty()) << "a sample of no event at " << r.offset;
    out.samples.push_back(line);
    if (frames.size() >= 2) ++out.unwound;
    out.deepest = std::max(out.deepest, frames.size());
  };
  const analysis::ReplayResult result = analysis::replay(*reader, *machine, symbolizer, nullptr, h);
  EXPECT_TRUE(result.problems.empty()) << path;
  out.stats = unwinder.stats();
  return out;
}

// The cached rules against libdwfl on one file, for the limits perf uses and a short one.
void expect_same_frames(const std::string& path, size_t min_unwound, size_t min_depth) {
  for (unsigned max_stack : {127u, 5u}) {
    SCOPED_TRACE(fmt::format("{} max_stack {}", path, max_stack));
    const Walked libdwfl = walk_file(path, false, max_stack);
    const Walked cached = walk_file(path, true, max_stack);
    EXPECT_GE(libdwfl.unwound, min_unwound) << "set-up: too few stacks unwound";
    if (max_stack > 5) {
      EXPECT_GE(libdwfl.deepest, min_depth) << "set-up: no deep stack";
    }
    ASSERT_EQ(cached.samples.size(), libdwfl.samples.size());
    size_t differ = 0;
    for (size_t i = 0; i < cached.samples.size(); ++i) {
      if (cached.samples[i] != libdwfl.samples[i] && differ++ < 5) {
        ADD_FAILURE() << "cached rules: " << cached.samples[i] << "\nlibdwfl:      " << libdwfl.samples[i];
      }
    }
    EXPECT_EQ(differ, 0u);
    EXPECT_EQ(libdwfl.stats.slow_walks, 0u) << "libdwfl's walk was asked for";
    // The cached rules must do the walking: only stacks with a rule they do not follow go to
    // libdwfl (none in these files but a handful of frames near the start).
    EXPECT_LE(cached.stats.slow_walks * 20, cached.stats.samples)
        << cached.stats.slow_walks << " of " << cached.stats.samples << " walks handed to libdwfl";
  }
}

TEST(DwarfRules, CachedRulesGiveLibdwflsFramesOnDeepRecursionWithoutFramePointers) {
  TPERF_REQUIRE_PERF();
  const std::string dir = scratch_dir();
  const std::string bin = dir + "/deep_nofp";
  const CommandResult c = run(fmt::format("gcc -O2 -g -fomit-frame-pointer -o {} {}/tests/e2e/workloads/deep_nofp.c",
                                          shell_quote(bin), TPERF_SOURCE_DIR));
  ASSERT_EQ(c.status, 0) << "set-up failed: compiling deep_nofp.c: " << c.err;
  const std::string path = dir + "/deep_nofp.data";
  // -D 10: the samples of the exec and the dynamic loader's start-up (user pc at ld.so's _start,
  // which has no FDE and goes to libdwfl) are left out. Where page faults are slow (a VM) they
  // were 32 of 274 samples, past the 5% the check below allows.
  const Recording rec = record_with_perf(
      fmt::format("perf record -q -e cpu-clock -c 100000 -D 10 --call-graph dwarf,16384 -o {} -- {} 0.06",
                  shell_quote(path), shell_quote(bin)),
      path);
  ASSERT_TRUE(rec.error.empty()) << "set-up failed: " << rec.error;
  expect_same_frames(rec.path, 200, 15);
}

// A perf 6.5 recording of another machine (fibo, DWARF stacks, zstd in a pipe): its binaries are
// not here, so walks stop where a file cannot be read; both ways must stop alike.
TEST(DwarfRules, CachedRulesStopAsLibdwflWhereFilesAreMissing) {
  const std::string path = corpus_dir() + "/linux-perf-data/fibo.compressed2.pipe.data";
  ASSERT_TRUE(std::filesystem::exists(path)) << path;
  for (unsigned max_stack : {127u, 5u}) {
    const Walked libdwfl = walk_file(path, false, max_stack);
    const Walked cached = walk_file(path, true, max_stack);
    EXPECT_GT(libdwfl.samples.size(), 10u);
    EXPECT_EQ(cached.samples, libdwfl.samples) << "max_stack " << max_stack;
  }
}

}  // namespace
}  // namespace tperf::test::e2e
