// The flame page's timeline: the recording's time cut into a bounded number of equal buckets;
// per bucket, the samples of each entry of the stack table's counts (so the page re-adds a time
// range with the filters it already has), and per thread and bucket the nanoseconds it spent
// switched out, runnable or sleeping (when the file has sched_switch samples).
//
// Bucket rule (what the page and its tests count by): span = last_time - first_time + 1 ns,
// width = ceil(span / buckets) ns, bucket of time t = (t - first_time) / width (integer division),
// so bucket b holds [first_time + b*width, first_time + (b+1)*width). When the (bucket, count)
// cells would pass max_cells, the width doubles (two buckets become one) until they fit or the
// buckets are down to min_buckets; if they still do not fit, each bucket keeps its heaviest
// max_cells / buckets cells (by samples, then weight) and the rest are folded per (thread,
// event) into "folded" entries, which a range counts on the root of the graph: totals and the
// thread/event filters stay exact, the stacks of the folded samples are not kept.
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/profile.h"

namespace tperf::output {

struct FlameTimelineOptions {
  uint32_t buckets = 1000;
  uint32_t min_buckets = 200;
  size_t max_cells = 1'000'000;
};

struct FlameTimeline {
  uint64_t start = 0;    // Profile::first_time: bucket 0 starts here
  uint64_t width = 0;    // nanoseconds per bucket
  uint32_t buckets = 0;  // 0: no timeline (no timed samples)
  // Cells of bucket b: [cell_start[b], cell_start[b + 1]), by count index within a bucket.
  std::vector<uint32_t> cell_start;    // buckets + 1 entries
  std::vector<uint32_t> cell_count;    // index into Profile::counts
  std::vector<uint64_t> cell_samples;  // samples of that count in the bucket
  std::vector<uint64_t> cell_weight;   // and the sum of their weights
  // Folded cells of bucket b: [fold_start[b], fold_start[b + 1]) per (thread, event); empty
  // when nothing was folded.
  std::vector<uint32_t> fold_start, fold_thread, fold_event;
  std::vector<uint64_t> fold_samples, fold_weight;
  // Off-CPU time per (thread, bucket) that has some, by thread then bucket.
  bool has_states = false;
  std::vector<uint32_t> state_thread, state_bucket;
  std::vector<uint64_t> state_runnable, state_sleeping;  // ns within the bucket
  // Per thread of the profile: first and last time it was seen (a sample or a state's ends), ns
  // from start; -1 for a thread never seen in time.
  std::vector<int64_t> thread_first, thread_last;
};

// Needs the profile's timed samples (ProfileOptions::timed_samples) and, for the states,
// ProfileOptions::thread_states.
FlameTimeline flame_timeline(const analysis::Profile& profile, const FlameTimelineOptions& options = {});

}  // namespace tperf::output
