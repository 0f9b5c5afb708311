#include "output/flame_timeline.h"

#include <algorithm>
#include <cstddef>
#include <unordered_map>

namespace tperf::output {

using analysis::kNoIndex;

namespace {

struct Cell {
  uint32_t bucket;
  uint32_t count;
  uint64_t samples;
  uint64_t weight;
};

// Sorts by (bucket, count) and adds up the cells that share both.
void merge_cells(std::vector<Cell>& cells) {
  std::sort(cells.begin(), cells.end(),
            [](const Cell& a, const Cell& b) { return a.bucket != b.bucket ? a.bucket < b.bucket : a.count < b.count; });
  size_t out = 0;
  for (size_t i = 0; i < cells.size(); ++i) {
    if (out > 0 && cells[out - 1].bucket == cells[i].bucket && cells[out - 1].count == cells[i].count) {
      cells[out - 1].samples += cells[i].samples;
      cells[out - 1].weight += cells[i].weight;
    } else {
      cells[out++] = cells[i];
    }
  }
  cells.resize(out);
}

uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

}  // namespace

FlameTimeline flame_timeline(const analysis::Profile& p, const FlameTimelineOptions& options) {
  FlameTimeline t;
  if (p.samples.empty() || p.last_time < p.first_time || (p.first_time == 0 && p.last_time == 0)) return t;
  // The time line runs to the last sample, or to the end of the last off-CPU interval.
  uint64_t last = p.last_time;
  for (const analysis::ProfileSample& s : p.samples) {
    if (s.interval && s.time >= p.first_time && s.weight > 0) last = std::max(last, s.time + s.weight - 1);
  }
  const uint64_t span = last - p.first_time + 1;
  t.start = p.first_time;
  t.width = ceil_div(span, std::max<uint32_t>(options.buckets, 1));
  auto bucket_of = [&](uint64_t time) {
    const uint64_t c = std::clamp(time, p.first_time, last);
    return static_cast<uint32_t>((c - p.first_time) / t.width);
  };

  // A sample without its count index (a hand-made profile) finds it by thread, event and stack.
  std::unordered_map<uint64_t, uint32_t> by_key;
  auto count_of = [&](const analysis::ProfileSample& s) -> uint32_t {
    if (s.count != kNoIndex && s.count < p.counts.size()) return s.count;
    if (by_key.empty()) {
      for (size_t i = 0; i < p.counts.size(); ++i) {
        const auto& c = p.counts[i];
        by_key.emplace((uint64_t{c.thread} << 40) ^ (uint64_t{c.event} << 32) ^ c.stack, static_cast<uint32_t>(i));
      }
    }
    auto it = by_key.find((uint64_t{s.thread} << 40) ^ (uint64_t{s.event} << 32) ^ s.stack);
    return it == by_key.end() ? kNoIndex : it->second;
  };

  std::vector<Cell> cells;
  {
    std::unordered_map<uint64_t, size_t> index;
    for (const analysis::ProfileSample& s : p.samples) {
      const uint32_t c = count_of(s);
      if (c == kNoIndex) continue;
      const uint32_t b = bucket_of(s.time);
      auto cell = [&](uint32_t bucket) -> Cell& {
        auto [it, fresh] = index.try_emplace(uint64_t{bucket} << 32 | c, cells.size());
        if (fresh) cells.push_back({bucket, c, 0, 0});
        return cells[it->second];
      };
      cell(b).samples += 1;
      if (!s.interval || s.time < p.first_time) {
        cell(b).weight += s.weight;
        continue;
      }
      // An off-CPU interval weighs, in each bucket, the part of it that falls there; the
      // switch itself counts where it began.
      const uint64_t from = s.time, to = s.time + s.weight;
      for (uint64_t at = from; at < to;) {
        const uint32_t bb = bucket_of(at);
        const uint64_t bucket_end = p.first_time + (uint64_t{bb} + 1) * t.width;
        const uint64_t until = std::min(to, bucket_end);
        cell(bb).weight += until - at;
        at = until;
      }
    }
  }
  merge_cells(cells);
  t.buckets = static_cast<uint32_t>(ceil_div(span, t.width));
  // Over the budget: two buckets become one.
  while (cells.size() > options.max_cells && ceil_div(span, t.width * 2) >= std::max<uint32_t>(options.min_buckets, 1) &&
         t.buckets > 1) {
    t.width *= 2;
    t.buckets = static_cast<uint32_t>(ceil_div(span, t.width));
    for (Cell& c : cells) c.bucket /= 2;
    merge_cells(cells);
  }

  // Still too many: each bucket keeps its heaviest cells, the rest folded per (thread, event).
  if (cells.size() > options.max_cells) {
    const size_t keep = std::max<size_t>(1, options.max_cells / t.buckets);
    std::vector<Cell> kept;
    t.fold_start.assign(t.buckets + 1, 0);
    std::unordered_map<uint64_t, std::pair<uint64_t, uint64_t>> fold_of;  // (thread << 32 | event) -> totals
    std::vector<std::pair<uint64_t, std::pair<uint64_t, uint64_t>>> folds;
    for (size_t i = 0; i < cells.size();) {
      size_t j = i;
      while (j < cells.size() && cells[j].bucket == cells[i].bucket) ++j;
      const uint32_t bucket = cells[i].bucket;
      if (j - i > keep) {
        std::sort(cells.begin() + static_cast<ptrdiff_t>(i), cells.begin() + static_cast<ptrdiff_t>(j), [](const Cell& a, const Cell& b) {
          return a.samples != b.samples ? a.samples > b.samples : a.weight != b.weight ? a.weight > b.weight : a.count < b.count;
        });
        fold_of.clear();
        for (size_t k = i + keep; k < j; ++k) {
          const analysis::ProfileCount& pc = p.counts[cells[k].count];
          auto& f = fold_of[uint64_t{pc.thread} << 32 | pc.event];
          f.first += cells[k].samples;
          f.second += cells[k].weight;
        }
        folds.assign(fold_of.begin(), fold_of.end());
        std::sort(folds.begin(), folds.end());
        for (const auto& [key, sw] : folds) {
          t.fold_thread.push_back(static_cast<uint32_t>(key >> 32));
          t.fold_event.push_back(static_cast<uint32_t>(key));
          t.fold_samples.push_back(sw.first);
          t.fold_weight.push_back(sw.second);
        }
        t.fold_start[bucket + 1] += static_cast<uint32_t>(folds.size());
        std::sort(cells.begin() + static_cast<ptrdiff_t>(i), cells.begin() + static_cast<ptrdiff_t>(i + keep),
                  [](const Cell& a, const Cell& b) { return a.count < b.count; });
        kept.insert(kept.end(), cells.begin() + static_cast<ptrdiff_t>(i), cells.begin() + static_cast<ptrdiff_t>(i + keep));
      } else {
        kept.insert(kept.end(), cells.begin() + static_cast<ptrdiff_t>(i), cells.begin() + static_cast<ptrdiff_t>(j));
      }
      i = j;
    }
    for (uint32_t b = 0; b < t.buckets; ++b) t.fold_start[b + 1] += t.fold_start[b];
    cells = std::move(kept);
  }

  t.cell_start.assign(t.buckets + 1, 0);
  t.cell_count.reserve(cells.size());
  t.cell_samples.reserve(cells.size());
  t.cell_weight.reserve(cells.size());
  for (const Cell& c : cells) {
    ++t.cell_start[c.bucket + 1];
    t.cell_count.push_back(c.count);
    t.cell_samples.push_back(c.samples);
    t.cell_weight.push_back(c.weight);
  }
  for (uint32_t b = 0; b < t.buckets; ++b) t.cell_start[b + 1] += t.cell_start[b];

  // When each thread was seen: its samples and the ends of its off-CPU stretches.
  t.thread_first.assign(p.threads.size(), -1);
  t.thread_last.assign(p.threads.size(), -1);
  const uint64_t end = t.start + uint64_t{t.buckets} * t.width;  // the buckets' end
  auto seen = [&](uint32_t thread, uint64_t time) {
    if (thread >= p.threads.size()) return;
    const auto rel = static_cast<int64_t>(std::clamp(time, t.start, end) - t.start);
    if (t.thread_first[thread] < 0 || rel < t.thread_first[thread]) t.thread_first[thread] = rel;
    t.thread_last[thread] = std::max(t.thread_last[thread], rel);
  };
  for (const analysis::ProfileSample& s : p.samples) seen(s.thread, s.time);

  t.has_states = p.has_thread_states;
  if (!p.has_thread_states) return t;
  // Per thread, its stretches spread over the buckets they overlap (dense per thread, then
  // written out sparse).
  std::vector<const analysis::ProfileThreadState*> states;
  states.reserve(p.thread_states.size());
  for (const auto& s : p.thread_states) {
    if (s.thread < p.threads.size() && s.end > s.start) states.push_back(&s);
  }
  std::stable_sort(states.begin(), states.end(), [](const auto* a, const auto* b) { return a->thread < b->thread; });
  std::vector<uint64_t> runnable(t.buckets), sleeping(t.buckets);
  std::vector<uint32_t> touched;
  for (size_t i = 0; i < states.size();) {
    const uint32_t thread = states[i]->thread;
    for (; i < states.size() && states[i]->thread == thread; ++i) {
      const analysis::ProfileThreadState& s = *states[i];
      seen(thread, s.start);
      seen(thread, s.end);
      const uint64_t from = std::clamp(s.start, t.start, end), to = std::clamp(s.end, t.start, end);
      if (to <= from) continue;
      auto& into = s.runnable ? runnable : sleeping;
      for (uint64_t b = (from - t.start) / t.width; b < t.buckets; ++b) {
        const uint64_t b0 = t.start + b * t.width, b1 = b0 + t.width;
        if (b0 >= to) break;
        const uint64_t ns = std::min(to, b1) - std::max(from, b0);
        if (runnable[b] == 0 && sleeping[b] == 0) touched.push_back(static_cast<uint32_t>(b));
        into[b] += ns;
      }
    }
    std::sort(touched.begin(), touched.end());
    for (uint32_t b : touched) {
      t.state_thread.push_back(thread);
      t.state_bucket.push_back(b);
      t.state_runnable.push_back(runnable[b]);
      t.state_sleeping.push_back(sleeping[b]);
      runnable[b] = sleeping[b] = 0;
    }
    touched.clear();
  }
  return t;
}

}  // namespace tperf::output
