// OrderedEvents on writer-made files: round-by-round flushing, out-of-order counting, untimed
// records, FINISHED_INIT, the memory bound, and the delivery order perf script itself uses.
#include "session/ordered_events.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "perfdata/record_builder.h"
#include "perfdata/writer.h"
#include "test_util.h"

namespace tperf::session {
namespace {

using namespace perfdata;
using test::TempDir;

PerfEventAttr attr() {
  PerfEventAttr a;
  a.type = kTypeSoftware;
  a.size = kAttrSizeVer7;
  a.config = kSwCpuClock;
  a.sample_period = 10000;
  a.sample_type = kSampleIp | kSampleTid | kSampleTime | kSampleCpu | kSamplePeriod;
  a.set_flag(kFlagSampleIdAll);
  a.set_flag(kFlagExcludeKernel);
  a.set_flag(kFlagComm);
  a.set_flag(kFlagTask);
  return a;
}

// A record list: a sample per entry (time, ip = time) or a round marker (time 0, is_round).
struct Item {
  uint64_t time;
  bool round = false;
  bool init = false;
};

std::string write(const TempDir& dir, const std::vector<Item>& items) {
  Writer w;
  std::string path = dir.file("ordered.data");
  w.open(path);
  w.add_attr(attr(), {1}, "cpu-clock");
  RecordBuilder rb = w.builder(0);
  CommEvent c;
  c.pid = c.tid = 50;
  c.comm = "app";
  w.write_record(rb.comm(c, SampleId{50, 50, 0, 0, 0, 0}));
  for (const Item& it : items) {
    if (it.round) {
      w.write_record(rb.finished_round());
    } else if (it.init) {
      w.write_record(rb.finished_init());
    } else {
      Sample s;
      s.pid = s.tid = 50;
      s.time = it.time;
      s.ip = 0x400000 + it.time;
      s.cpu = static_cast<uint32_t>(it.time % 2);
      s.period = 10000;
      w.write_record(rb.sample(s));
    }
  }
  w.finish();
  return path;
}

struct Delivered {
  std::vector<uint64_t> sample_times;
  std::vector<uint32_t> types;
  OrderedEvents::Stats stats;
};

Delivered run(const std::string& path, OrderedEvents::Options opt = {}) {
  auto reader = Reader::open(path);
  Delivered d;
  OrderedEvents oe(
      *reader,
      [&](const Record& rec, uint64_t time) {
        d.types.push_back(rec.type);
        if (rec.type == kRecordSample) {
          Sample s;
          reader->decode_sample(rec, s);
          EXPECT_EQ(s.time, time);
          d.sample_times.push_back(time);
        }
      },
      opt);
  Record rec;
  while (reader->next(rec)) oe.push(rec);
  oe.flush_all();
  d.stats = oe.stats();
  return d;
}

TEST(OrderedEvents, RoundsDeliverInTimeOrder) {
  TempDir dir;
  // Two ring buffers' worth of records interleaved per round, each in order on its own.
  auto d = run(write(dir, {{10}, {5}, {20}, {0, true}, {15}, {30}, {0, true}, {25}, {40}, {0, true}, {35}}));
  EXPECT_EQ(d.sample_times, (std::vector<uint64_t>{5, 10, 15, 20, 25, 30, 35, 40}));
  EXPECT_EQ(d.stats.out_of_order, 0u);
  EXPECT_EQ(d.stats.rounds, 3u);
  EXPECT_EQ(d.stats.queued, 9u);  // 8 samples + the COMM (it has a sample_id time)
}

TEST(OrderedEvents, RecordsOlderThanWhatWasDeliveredAreCounted) {
  TempDir dir;
  // 12 arrives two rounds after 20 was already delivered.
  auto d = run(write(dir, {{10}, {20}, {0, true}, {30}, {0, true}, {12}, {40}, {0, true}}));
  EXPECT_EQ(d.stats.out_of_order, 1u);
  EXPECT_EQ(d.sample_times, (std::vector<uint64_t>{10, 20, 12, 30, 40}));
}

TEST(OrderedEvents, FinishedInitFlushesAndUntimedRecordsPassAtOnce) {
  TempDir dir;
  auto d = run(write(dir, {{7}, {3}, {0, false, true}, {9}, {8}}));
  // FINISHED_INIT delivers 3 and 7 first, then itself; the rest is sorted at the end.
  EXPECT_EQ(d.sample_times, (std::vector<uint64_t>{3, 7, 8, 9}));
  auto init = std::find(d.types.begin(), d.types.end(), kRecordFinishedInit);
  ASSERT_NE(init, d.types.end());
  EXPECT_EQ(std::count(d.types.begin(), init, kRecordSample), 2);
}

TEST(OrderedEvents, QueueStaysUnderItsMemoryLimit) {
  TempDir dir;
  std::vector<Item> items;
  for (uint64_t t = 1; t <= 20000; ++t) items.push_back({t});  // no rounds at all (perf 3.x files)
  OrderedEvents::Options opt;
  opt.max_queued_bytes = 64 * 1024;
  auto d = run(write(dir, items), opt);
  EXPECT_EQ(d.sample_times.size(), 20000u);
  EXPECT_TRUE(std::is_sorted(d.sample_times.begin(), d.sample_times.end()));
  EXPECT_GT(d.stats.forced_flushes, 0u);
  EXPECT_LE(d.stats.peak_queued_bytes, opt.max_queued_bytes + 64);
}

// Records of a mapped file (Reader::Options::map) are queued as they lie in the mapping, not
// copied: each one is delivered with the very bytes the reader handed over.
TEST(OrderedEvents, RecordsOfAMappedFileAreDeliveredWithoutACopy) {
  TempDir dir;
  std::vector<Item> items;
  for (uint64_t t = 1; t <= 3000; ++t) {
    items.push_back({(t * 7919) % 3001});  // out of order
    if (t % 100 == 0) items.push_back({0, true});
  }
  auto reader = Reader::open(write(dir, items), Reader::Options{.map = true});
  std::map<uint64_t, const uint8_t*> pushed;  // offset -> where the reader had the bytes
  size_t delivered = 0, same = 0;
  OrderedEvents oe(*reader, [&](const Record& rec, uint64_t) {
    if (rec.type != kRecordSample) return;
    ++delivered;
    auto it = pushed.find(rec.offset);
    ASSERT_NE(it, pushed.end());
    EXPECT_TRUE(rec.stable);
    if (it->second == rec.bytes.data()) ++same;
  });
  Record rec;
  while (reader->next(rec)) {
    ASSERT_TRUE(rec.stable) << "a record of a regular file at " << rec.offset;
    pushed[rec.offset] = rec.bytes.data();
    oe.push(rec);
  }
  oe.flush_all();
  EXPECT_EQ(delivered, 3000u);
  EXPECT_EQ(same, delivered) << "records delivered from a copy";
  EXPECT_GT(oe.stats().queued, 3000u);
}

// Holding (Options::hold_ticket): the consumer keeps the spans of the records it was given in
// "batches" of 500 and lets a batch go only when 100 more wait behind it (2.7 MiB of records,
// more than two chunks or windows), as the replay driver's applying thread lags behind its
// reading thread. Every span kept must still hold the record's bytes when its batch goes, though
// many 1 MiB chunks (or the reader's windows) were emptied since; and the memory let go is used
// again (nothing grows without bound). `windows`: the reader holds its windows
// (Reader::set_holding) and the queue keeps records there, giving each window back.
struct HeldRun {
  uint64_t held = 0, checked = 0, damaged = 0, windows_given_back = 0;
  size_t reused = 0;
  bool reader_holds = false;
};

HeldRun run_held(const std::string& path, bool windows) {
  auto reader = Reader::open(path);
  HeldRun out;
  struct Kept {
    const uint8_t* at;
    std::vector<uint8_t> bytes;
  };
  std::vector<std::vector<Kept>> batches(1);  // batches[i]: number released + i + 1
  uint64_t released = 0;
  std::set<const uint8_t*> seen;
  auto let_go = [&] {
    for (const Kept& k : batches.front()) {
      ++out.checked;
      if (std::memcmp(k.at, k.bytes.data(), k.bytes.size()) != 0) ++out.damaged;
    }
    batches.erase(batches.begin());
    ++released;
  };
  OrderedEvents::Options opt;
  opt.hold_ticket = [&] { return released + batches.size(); };
  opt.released = [&] { return released; };
  if (windows) {
    out.reader_holds = reader->set_holding(true);
    opt.release_window = [&](uint64_t w) {
      ++out.windows_given_back;
      EXPECT_LT(w, reader->window_seq()) << "the window being read given back";
      reader->release_window(w);
    };
  }
  OrderedEvents oe(*reader, [&](const Record& rec, uint64_t) {
    if (rec.type != kRecordSample) return;
    EXPECT_TRUE(rec.held);
    if (!rec.held) return;
    ++out.held;
    if (!seen.insert(rec.bytes.data()).second) ++out.reused;
    batches.back().push_back({rec.bytes.data(), std::vector<uint8_t>(rec.bytes.begin(), rec.bytes.end())});
    if (batches.back().size() == 500) {
      batches.emplace_back();
      if (batches.size() > 100) let_go();
    }
  }, opt);
  Record rec;
  uint64_t last_window = 0;
  while (reader->next(rec)) {
    if (windows) {
      EXPECT_GE(rec.window, last_window) << "windows out of order at " << rec.offset;
      last_window = rec.window;
    }
    oe.push(rec);
  }
  oe.flush_all();
  while (!batches.empty()) let_go();
  if (windows) reader->set_holding(false);
  return out;
}

std::string held_file(const TempDir& dir) {
  std::vector<Item> items;
  for (uint64_t t = 1; t <= 200000; ++t) {
    items.push_back({(t / 1000) * 1000 + (t * 7919) % 1000});  // scrambled within each round
    if (t % 1000 == 0) items.push_back({0, true});
  }
  return write(dir, items);
}

TEST(OrderedEvents, HeldRecordsStayUntilTheConsumerLetsThemGo) {
  TempDir dir;
  const std::string path = held_file(dir);
  const HeldRun r = run_held(path, false);
  EXPECT_EQ(r.held, 200000u);
  EXPECT_EQ(r.checked, 200000u);
  EXPECT_EQ(r.damaged, 0u) << "records overwritten before the consumer let them go";
  // 200,000 records of 56 bytes fill 10.7 MiB of chunks, and at most 4-5 MiB are held at a time:
  // the others are used again.
  EXPECT_GT(r.reused, 50000u);

  // Without holding, nothing is delivered held.
  auto plain_reader = Reader::open(path);
  size_t held_plain = 0;
  OrderedEvents plain(*plain_reader, [&](const Record& rec, uint64_t) { held_plain += rec.held; });
  Record rec;
  while (plain_reader->next(rec)) plain.push(rec);
  plain.flush_all();
  EXPECT_EQ(held_plain, 0u);
}

// The same with the records kept where the reader read them: every window but the last few is
// given back, and the windows' memory is used again.
TEST(OrderedEvents, RecordsHeldInTheReadersWindowsStayUntilTheConsumerLetsThemGo) {
  TempDir dir;
  const HeldRun r = run_held(held_file(dir), true);
  ASSERT_TRUE(r.reader_holds) << "a regular file read window by window must hold";
  EXPECT_EQ(r.held, 200000u);
  EXPECT_EQ(r.checked, 200000u);
  EXPECT_EQ(r.damaged, 0u) << "records overwritten before the consumer let them go";
  // 10.7 MiB of records in 1 MiB windows: all but the last few are given back.
  EXPECT_GE(r.windows_given_back, 6u);
  EXPECT_GT(r.reused, 50000u);
}

// A mapped file (Reader::Options::map) does not hold windows: its records stay in the mapping
// anyway (Record::stable). One read window by window does, and says so.
TEST(OrderedEvents, MappedFilesHoldNoWindows) {
  TempDir dir;
  const std::string path = write(dir, {{10}, {20}, {0, true}});
  auto mapped = Reader::open(path, Reader::Options{.map = true});
  EXPECT_FALSE(mapped->set_holding(true));
  Record rec;
  size_t n = 0;
  while (mapped->next(rec)) {
    ++n;
    EXPECT_EQ(rec.window, 0u);
    EXPECT_TRUE(rec.stable);
  }
  EXPECT_GT(n, 3u);
  auto read = Reader::open(path);
  EXPECT_TRUE(read->set_holding(true));
  n = 0;
  while (read->next(rec)) {
    ++n;
    EXPECT_EQ(rec.window, read->window_seq());
    EXPECT_NE(rec.window, 0u);
  }
  EXPECT_GT(n, 3u);
  read->set_holding(false);
  EXPECT_EQ(read->window_seq(), 0u);
}

// A file whose event copies user stacks of `stack` bytes (--call-graph dwarf): its records are
// mostly the copies, which a reader maps by default from 4 KiB on (the unwinder reads a part of
// each); an event without copies, or with small ones, is read window by window.
std::string write_stack_copies(const TempDir& dir, uint32_t stack) {
  Writer w;
  std::string path = dir.file("stacks-" + std::to_string(stack) + ".data");
  w.open(path);
  PerfEventAttr a = attr();
  a.sample_type |= kSampleRegsUser | kSampleStackUser;
  a.sample_regs_user = 0xff;
  a.sample_stack_user = stack;
  w.add_attr(a, {1}, "cpu-clock");
  RecordBuilder rb = w.builder(0);
  std::vector<uint8_t> bytes(stack, 0x5a);
  for (uint64_t t = 1; t <= 20; ++t) {
    Sample s;
    s.pid = s.tid = 50;
    s.time = t * 1000;
    s.ip = 0x400000 + t;
    s.period = 10000;
    s.regs_user.abi = 2;
    s.regs_user.mask = 0xff;
    s.regs_user.regs.assign(8, t);
    s.stack_user = bytes;
    s.stack_user_size = stack;
    s.stack_dyn_size = 256;
    w.write_record(rb.sample(s));
  }
  w.finish();
  return path;
}

TEST(OrderedEvents, FilesOfLargeStackCopiesAreMapped) {
  TempDir dir;
  auto count_stable = [](Reader& r) {
    Record rec;
    size_t n = 0, stable = 0;
    while (r.next(rec)) {
      ++n;
      stable += rec.stable;
    }
    EXPECT_EQ(n, 20u);
    return stable;
  };
  const std::string large = write_stack_copies(dir, 8192);
  auto mapped = Reader::open(large);
  EXPECT_FALSE(mapped->set_holding(true));  // a mapped file has no windows to hold
  EXPECT_EQ(count_stable(*mapped), 20u);
  // Asked not to, the reader reads it.
  auto read = Reader::open(large, Reader::Options{.map_stack_copies = false});
  EXPECT_TRUE(read->set_holding(true));
  EXPECT_EQ(count_stable(*read), 0u);
  // Copies under 4 KiB: read.
  auto small = Reader::open(write_stack_copies(dir, 1024));
  EXPECT_TRUE(small->set_holding(true));
  EXPECT_EQ(count_stable(*small), 0u);
}

// perf script is the oracle: on a file whose per-round order is scrambled (including records
// that come too late), it prints samples in the order OrderedEvents delivers them.
TEST(OrderedEvents, SameOrderAsPerfScript) {
  if (!test::have_program("perf")) GTEST_SKIP() << "perf not installed";
  TempDir dir;
  std::mt19937 rng(3);
  std::vector<Item> items;
  uint64_t base = 1'000'000'000;
  for (int round = 0; round < 30; ++round) {
    std::vector<Item> r;
    for (int i = 0; i < 40; ++i) r.push_back({base + static_cast<uint64_t>(round) * 1000 + rng() % 2600});
    std::shuffle(r.begin(), r.end(), rng);
    items.insert(items.end(), r.begin(), r.end());
    items.push_back({0, true});
  }
  // A round of five runs in order on their own (five ring buffers, an odd number to merge), the
  // same times in several; then one far from any order (more runs than are merged: sorted).
  base += 40'000;
  for (int run = 0; run < 5; ++run) {
    for (uint64_t t = 0; t < 300; t += 1 + static_cast<uint64_t>(run)) items.push_back({base + t});
  }
  items.push_back({0, true});
  base += 1000;
  std::vector<Item> r;
  for (int i = 0; i < 2000; ++i) r.push_back({base + rng() % 5000});
  std::shuffle(r.begin(), r.end(), rng);
  items.insert(items.end(), r.begin(), r.end());
  items.push_back({0, true});
  std::string path = write(dir, items);
  auto d = run(path);
  EXPECT_GT(d.stats.out_of_order, 0u);
  std::string out = test::run_command("perf script -F ip -i " + path + " 2>/dev/null");
  std::istringstream in(out);
  std::vector<uint64_t> perf_times;
  std::string ip;
  while (in >> ip) perf_times.push_back(std::stoull(ip, nullptr, 16) - 0x400000);
  EXPECT_EQ(perf_times, d.sample_times);
}

}  // namespace
}  // namespace tperf::session
