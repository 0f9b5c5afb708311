// walk_ring over a byte array standing for the kernel's ring: records written with RecordBuilder
// come back whole and in order, also when they wrap around the end, and a corrupt header stops
// the walk without reading out of bounds.
#include "record/ring_buffer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "perfdata/record_builder.h"

namespace tperf::record {
namespace {

using namespace perfdata;

// Copies `rec` into a ring of `ring.size()` bytes at free-running position `pos`, wrapping.
void put(std::vector<uint8_t>& ring, uint64_t pos, const std::vector<uint8_t>& rec) {
  for (size_t i = 0; i < rec.size(); ++i) ring[(pos + i) & (ring.size() - 1)] = rec[i];
}

std::vector<std::vector<uint8_t>> records_for_test() {
  PerfEventAttr a;
  a.sample_type = kSampleIp | kSampleTid | kSampleTime;
  a.set_flag(kFlagSampleIdAll);
  RecordBuilder rb(a);
  std::vector<std::vector<uint8_t>> out;
  for (int i = 0; i < 40; ++i) {
    if (i % 3 == 0) {
      out.push_back(rb.comm({.pid = i, .tid = i, .comm = std::string(static_cast<size_t>(i % 13) + 1, 'c')}));
    } else {
      Sample s;
      s.ip = 0x400000u + static_cast<uint64_t>(i);
      s.pid = s.tid = static_cast<uint32_t>(i);
      s.time = static_cast<uint64_t>(i) * 10;
      out.push_back(rb.sample(s));
    }
  }
  return out;
}

TEST(RingBuffer, WalksRecordsAcrossTheWrap) {
  auto recs = records_for_test();
  std::vector<uint8_t> ring(256);
  std::vector<uint8_t> scratch;
  uint64_t head = 0, tail = 0;
  size_t next_in = 0, next_out = 0, wrapped = 0;
  // Producer and consumer take turns, as the kernel and the recorder do.
  while (next_out < recs.size()) {
    while (next_in < recs.size() && head + recs[next_in].size() - tail <= ring.size()) {
      if ((head & 255) + recs[next_in].size() > ring.size()) ++wrapped;
      put(ring, head, recs[next_in]);
      head += recs[next_in].size();
      ++next_in;
    }
    uint64_t corrupt = 0;
    tail = walk_ring(ring.data(), ring.size(), tail, head, scratch,
                     [&](std::span<const uint8_t> rec) {
                       ASSERT_LT(next_out, recs.size());
                       EXPECT_EQ(std::vector<uint8_t>(rec.begin(), rec.end()), recs[next_out]) << next_out;
                       ++next_out;
                     },
                     &corrupt);
    EXPECT_EQ(corrupt, 0u);
    EXPECT_EQ(tail, head);
  }
  EXPECT_GT(wrapped, 2u) << "the test must exercise records that straddle the end";
}

TEST(RingBuffer, HeaderSplitByTheEndIsReassembled) {
  // Only a corrupt kernel would do this, but the walk must not read past the ring.
  std::vector<uint8_t> ring(64, 0);
  PerfEventAttr a;
  a.sample_type = kSampleIp;
  auto rec = RecordBuilder(a).sample(Sample{.ip = 0x1234});
  put(ring, 60, rec);
  std::vector<uint8_t> scratch;
  int n = 0;
  uint64_t tail = walk_ring(ring.data(), ring.size(), 60, 60 + rec.size(), scratch,
                            [&](std::span<const uint8_t> r) {
                              EXPECT_EQ(std::vector<uint8_t>(r.begin(), r.end()), rec);
                              ++n;
                            },
                            nullptr);
  EXPECT_EQ(n, 1);
  EXPECT_EQ(tail, 60 + rec.size());
}

TEST(RingBuffer, CorruptSizeStopsTheWalk) {
  std::vector<uint8_t> ring(128, 0);
  uint8_t hdr[8] = {9, 0, 0, 0, 0, 0, 0xff, 0x7f};  // SAMPLE of 32767 bytes: more than is there
  std::memcpy(ring.data(), hdr, 8);
  std::vector<uint8_t> scratch;
  uint64_t corrupt = 0;
  int n = 0;
  uint64_t tail = walk_ring(ring.data(), ring.size(), 0, 64, scratch, [&](std::span<const uint8_t>) { ++n; }, &corrupt);
  EXPECT_EQ(n, 0);
  EXPECT_EQ(tail, 64u) << "the unreadable rest is given back to the kernel";
  EXPECT_EQ(corrupt, 64u);
  // A zero size would loop forever if not caught.
  std::memset(ring.data(), 0, 8);
  corrupt = 0;
  tail = walk_ring(ring.data(), ring.size(), 0, 16, scratch, [&](std::span<const uint8_t>) { ++n; }, &corrupt);
  EXPECT_EQ(corrupt, 16u);
  EXPECT_EQ(n, 0);
}

}  // namespace
}  // namespace tperf::record
