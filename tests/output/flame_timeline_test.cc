// The flame page's timeline data (output/flame_timeline.h) on a hand-built profile: buckets,
// cells and off-CPU states worked out by hand from the bucket rule (width = ceil(span / buckets),
// bucket = (t - first_time) / width), never from the code under test.
#include "output/flame_timeline.h"

#include <gtest/gtest.h>

#include <string>

#include "output/flame_page.h"

namespace tperf::output {
namespace {

using analysis::kNoIndex;

// Threads 0 (main 10/10) and 1 (worker 10/11); one stack (f); counts c0 = thread 0, c1 = thread 1.
// Samples (time, count, weight): 1000 c0 5, 1099 c0 5, 1100 c1 7, 1150 c0 5, 1999 c1 7.
// Span 1000..1999 = 1000 ns; 10 buckets of 100 ns:
//   bucket 0 [1000,1100): c0 2 samples 10;  bucket 1 [1100,1200): c0 1 5, c1 1 7;  bucket 9: c1 1 7.
// States: thread 0 sleeping 900..1050 (clipped to 1000..1050: bucket 0 50 ns);
//   thread 1 sleeping 1250..1480 (bucket 2 50, bucket 3 100, bucket 4 80), runnable 1480..1520
//   (bucket 4 20, bucket 5 20).
analysis::Profile timeline_profile() {
  analysis::Profile p;
  p.functions = {{"f", ""}};
  p.frames.resize(1);
  p.frames[0].function = 0;
  p.stacks = {{kNoIndex, 0, 0}};
  p.threads = {{10, 10, "main"}, {10, 11, "worker"}};
  p.events = {{"cpu-clock", "nanoseconds"}};
  p.counts = {{0, 0, 0, 3, 15}, {1, 0, 0, 2, 14}};
  p.samples = {{1000, 0, 0, 0, 5, 0}, {1099, 0, 0, 0, 5, 0}, {1100, 1, 0, 0, 7, 1}, {1150, 0, 0, 0, 5, 0}, {1999, 1, 0, 0, 7, 1}};
  p.first_time = 1000;
  p.last_time = 1999;
  p.thread_states = {{0, 900, 1050, false}, {1, 1250, 1480, false}, {1, 1480, 1520, true}};
  p.has_thread_states = true;
  return p;
}

TEST(FlameTimeline, BucketsCellsAndStatesByHand) {
  FlameTimelineOptions o;
  o.buckets = 10;
  const FlameTimeline t = flame_timeline(timeline_profile(), o);
  EXPECT_EQ(t.start, 1000u);
  EXPECT_EQ(t.width, 100u);
  ASSERT_EQ(t.buckets, 10u);
  EXPECT_EQ(t.cell_start, (std::vector<uint32_t>{0, 1, 3, 3, 3, 3, 3, 3, 3, 3, 4}));
  EXPECT_EQ(t.cell_count, (std::vector<uint32_t>{0, 0, 1, 1}));
  EXPECT_EQ(t.cell_samples, (std::vector<uint64_t>{2, 1, 1, 1}));
  EXPECT_EQ(t.cell_weight, (std::vector<uint64_t>{10, 5, 7, 7}));
  EXPECT_TRUE(t.has_states);
  EXPECT_EQ(t.state_thread, (std::vector<uint32_t>{0, 1, 1, 1, 1}));
  EXPECT_EQ(t.state_bucket, (std::vector<uint32_t>{0, 2, 3, 4, 5}));
  EXPECT_EQ(t.state_runnable, (std::vector<uint64_t>{0, 0, 0, 20, 20}));
  EXPECT_EQ(t.state_sleeping, (std::vector<uint64_t>{50, 50, 100, 80, 0}));
  // Thread 0: samples at 0, 99, 150 ns, its sleep clipped to 0..50; thread 1: samples at 100 and
  // 999, off-CPU 250..520.
  EXPECT_EQ(t.thread_first, (std::vector<int64_t>{0, 100}));
  EXPECT_EQ(t.thread_last, (std::vector<int64_t>{150, 999}));
}

// An uneven span: 1000 ns in 3 buckets is a width of 334 and 3 buckets; 1999 - 1000 = 999 is in
// bucket 2 (999 / 334), 1150 in bucket 0.
TEST(FlameTimeline, WidthRoundsUp) {
  FlameTimelineOptions o;
  o.buckets = 3;
  const FlameTimeline t = flame_timeline(timeline_profile(), o);
  EXPECT_EQ(t.width, 334u);
  ASSERT_EQ(t.buckets, 3u);
  // bucket 0: 1000, 1099, 1150 (c0) and 1100 (c1); bucket 2: 1999 (c1).
  EXPECT_EQ(t.cell_start, (std::vector<uint32_t>{0, 2, 2, 3}));
  EXPECT_EQ(t.cell_count, (std::vector<uint32_t>{0, 1, 1}));
  EXPECT_EQ(t.cell_samples, (std::vector<uint64_t>{3, 1, 1}));
  EXPECT_EQ(t.cell_weight, (std::vector<uint64_t>{15, 7, 7}));
  // Thread 1's stretches 1250..1520 all fall in bucket 0 [1000,1334) and bucket 1: sleeping
  // 1250..1334 = 84 in bucket 0, 1334..1480 = 146 in bucket 1; runnable 40 in bucket 1.
  EXPECT_EQ(t.state_thread, (std::vector<uint32_t>{0, 1, 1}));
  EXPECT_EQ(t.state_bucket, (std::vector<uint32_t>{0, 0, 1}));
  EXPECT_EQ(t.state_sleeping, (std::vector<uint64_t>{50, 84, 146}));
  EXPECT_EQ(t.state_runnable, (std::vector<uint64_t>{0, 0, 40}));
}

// Over the cell budget the buckets merge two by two: 4 cells at 10 buckets; at 5 (width 200):
// b0 {c0 3, c1 1}, b4 {c1 1} = 3; at 3 (width 400): b0 {c0, c1}, b2 {c1} = 3; at 2 (800):
// b0 {c0, c1}, b1 {c1} = 3; at 1 (1600): b0 {c0 3 15, c1 2 14} = 2.
TEST(FlameTimeline, CellBudgetMergesBuckets) {
  FlameTimelineOptions o;
  o.buckets = 10;
  o.max_cells = 2;
  o.min_buckets = 1;
  FlameTimeline t = flame_timeline(timeline_profile(), o);
  EXPECT_EQ(t.width, 1600u);
  ASSERT_EQ(t.buckets, 1u);
  EXPECT_EQ(t.cell_start, (std::vector<uint32_t>{0, 2}));
  EXPECT_EQ(t.cell_samples, (std::vector<uint64_t>{3, 2}));
  EXPECT_EQ(t.cell_weight, (std::vector<uint64_t>{15, 14}));
  EXPECT_EQ(t.state_bucket, (std::vector<uint32_t>{0, 0}));
  EXPECT_EQ(t.state_sleeping, (std::vector<uint64_t>{50, 230}));
  EXPECT_EQ(t.state_runnable, (std::vector<uint64_t>{0, 40}));
  EXPECT_TRUE(t.fold_start.empty());
  // Not below min_buckets: it stops at 2 buckets with 3 cells, and folds: 1 cell per bucket kept,
  // bucket 0's lighter c1 (1 sample, 7) folded as thread 1.
  o.min_buckets = 2;
  t = flame_timeline(timeline_profile(), o);
  EXPECT_EQ(t.width, 800u);
  ASSERT_EQ(t.buckets, 2u);
  EXPECT_EQ(t.cell_start, (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_EQ(t.cell_count, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(t.fold_start, (std::vector<uint32_t>{0, 1, 1}));
  EXPECT_EQ(t.fold_thread, (std::vector<uint32_t>{1}));
  EXPECT_EQ(t.fold_samples, (std::vector<uint64_t>{1}));
  EXPECT_EQ(t.fold_weight, (std::vector<uint64_t>{7}));
}

// Samples without their count index (older hand-made profiles) find it by thread, event, stack;
// without states has_states is false and no state is written; without samples, no timeline.
TEST(FlameTimeline, CountByKeyNoStatesNoSamples) {
  analysis::Profile p = timeline_profile();
  for (auto& s : p.samples) s.count = kNoIndex;
  p.thread_states.clear();
  p.has_thread_states = false;
  FlameTimelineOptions o;
  o.buckets = 10;
  const FlameTimeline t = flame_timeline(p, o);
  EXPECT_EQ(t.cell_count, (std::vector<uint32_t>{0, 0, 1, 1}));
  EXPECT_FALSE(t.has_states);
  EXPECT_TRUE(t.state_thread.empty());
  p.samples.clear();
  EXPECT_EQ(flame_timeline(p, o).buckets, 0u);
  EXPECT_EQ(flame_profile_json(p).find("\"timeline\""), std::string::npos);
}

// Off-CPU pages: a switch-out's weight is the time its thread then stayed out, spread over the
// buckets it covers, the switch itself counted where it began; the time line reaches the end of
// the last interval. Samples (time, count, weight): 1000 c1 100; 1050 c0 350 (an interval, to
// 1400); 1200 c1 100. Span 1000..1399 = 400 ns, 4 buckets of 100:
//   b0: c0 1 switch, 50 ns (1050..1100); c1 1 sample 100.  b1: c0 100 ns.
//   b2: c0 100 ns; c1 1 sample 100.  b3: c0 100 ns.
TEST(FlameTimeline, OffCpuIntervalsSpreadOverTheirBuckets) {
  analysis::Profile p;
  p.functions = {{"f", ""}};
  p.frames.resize(1);
  p.frames[0].function = 0;
  p.stacks = {{kNoIndex, 0, 0}};
  p.threads = {{10, 10, "main"}, {10, 11, "worker"}};
  p.events = {{"sched:sched_switch", "nanoseconds"}};
  p.counts = {{0, 0, 0, 1, 350}, {1, 0, 0, 2, 200}};
  p.samples = {{1000, 1, 0, 0, 100, 1}, {1050, 0, 0, 0, 350, 0, true}, {1200, 1, 0, 0, 100, 1}};
  p.first_time = 1000;
  p.last_time = 1200;
  FlameTimelineOptions o;
  o.buckets = 4;
  const FlameTimeline t = flame_timeline(p, o);
  EXPECT_EQ(t.width, 100u);
  ASSERT_EQ(t.buckets, 4u);
  EXPECT_EQ(t.cell_start, (std::vector<uint32_t>{0, 2, 3, 5, 6}));
  EXPECT_EQ(t.cell_count, (std::vector<uint32_t>{0, 1, 0, 0, 1, 0}));
  EXPECT_EQ(t.cell_samples, (std::vector<uint64_t>{1, 1, 0, 0, 1, 0}));
  EXPECT_EQ(t.cell_weight, (std::vector<uint64_t>{50, 100, 100, 100, 100, 100}));
}

// Past the budget with no bucket to merge (min_buckets reached), each bucket keeps its heaviest
// max_cells / buckets cells and folds the rest per (thread, event): budget 3 over 10 buckets keeps
// 1 per bucket; bucket 1 has c0 (1 sample, 5) and c1 (1, 7): equal samples, c1 weighs more and
// stays, c0 is folded as thread 0, event 0: 1 sample, 5.
TEST(FlameTimeline, FoldsTheLightestCellsPastTheBudget) {
  FlameTimelineOptions o;
  o.buckets = 10;
  o.min_buckets = 10;
  o.max_cells = 3;
  const FlameTimeline t = flame_timeline(timeline_profile(), o);
  ASSERT_EQ(t.buckets, 10u);
  EXPECT_EQ(t.cell_start, (std::vector<uint32_t>{0, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3}));
  EXPECT_EQ(t.cell_count, (std::vector<uint32_t>{0, 1, 1}));
  EXPECT_EQ(t.cell_samples, (std::vector<uint64_t>{2, 1, 1}));
  EXPECT_EQ(t.cell_weight, (std::vector<uint64_t>{10, 7, 7}));
  EXPECT_EQ(t.fold_start, (std::vector<uint32_t>{0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(t.fold_thread, (std::vector<uint32_t>{0}));
  EXPECT_EQ(t.fold_event, (std::vector<uint32_t>{0}));
  EXPECT_EQ(t.fold_samples, (std::vector<uint64_t>{1}));
  EXPECT_EQ(t.fold_weight, (std::vector<uint64_t>{5}));
  const std::string json = flame_profile_json(timeline_profile(), o);
  EXPECT_NE(json.find("\"folded\":{\"start\":[0,0,1,1,1,1,1,1,1,1,1],\"thread\":[0],\"event\":[0],\"samples\":[1],"
                      "\"weight\":[5]}"),
            std::string::npos)
      << json;
  // Nothing folded: no "folded" entry.
  o.max_cells = 4;
  EXPECT_EQ(flame_profile_json(timeline_profile(), o).find("\"folded\""), std::string::npos);
}

TEST(FlameTimeline, JsonAsThePageReadsIt) {
  FlameTimelineOptions o;
  o.buckets = 10;
  const std::string json = flame_profile_json(timeline_profile(), o);
  EXPECT_NE(json.find("\"timeline\":{\"start\":1000,\"width\":100,\"buckets\":10,\"cells\":{\"start\":"
                      "[0,1,3,3,3,3,3,3,3,3,4],\"count\":[0,0,1,1],\"samples\":[2,1,1,1],\"weight\":[10,5,7,7]},\n"
                      "\"hasStates\":true,\"states\":{\"thread\":[0,1,1,1,1],\"bucket\":[0,2,3,4,5],"
                      "\"runnable\":[0,0,0,20,20],\"sleeping\":[50,50,100,80,0]},\n"
                      "\"threads\":{\"first\":[0,100],\"last\":[150,999]}}}"),
            std::string::npos)
      << json;
}

}  // namespace
}  // namespace tperf::output
