#include "analysis/time_filter.h"

#include <gtest/gtest.h>

namespace tperf::analysis {
namespace {

// --time: "start,end" with up to nine decimals, open ends, several ranges.
TEST(TimeFilter, TimeRanges) {
  std::vector<TimeRange> r;
  ASSERT_EQ(parse_time_ranges("5387.95,5387.96", &r), "");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].start, 5387950000000ULL);
  EXPECT_EQ(r[0].end, 5387960000000ULL);
  EXPECT_TRUE(time_skipped(r, 5387949999999ULL));
  EXPECT_FALSE(time_skipped(r, 5387950000000ULL));
  EXPECT_FALSE(time_skipped(r, 5387960000000ULL));
  EXPECT_TRUE(time_skipped(r, 5387960000001ULL));
  EXPECT_FALSE(time_skipped(r, 0));  // perf never drops a sample without a time

  ASSERT_EQ(parse_time_ranges(",5387.000000001", &r), "");
  EXPECT_EQ(r[0].start, 0u);
  EXPECT_EQ(r[0].end, 5387000000001ULL);

  ASSERT_EQ(parse_time_ranges("1,2 3,4", &r), "");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_FALSE(time_skipped(r, 3500000000ULL));
  EXPECT_TRUE(time_skipped(r, 2500000000ULL));

  EXPECT_NE(parse_time_ranges("2,1", &r), "");
  EXPECT_NE(parse_time_ranges("5387.95", &r), "");  // perf wants the comma
  EXPECT_NE(parse_time_ranges("1.0000000001,", &r), "");
  EXPECT_NE(parse_time_ranges("abc,", &r), "");
}

// Percentages of the span from the first to the last sample of a.data (5387.939348633 and
// 5388.141979678, as perf script --ns prints them). perf script -v -i a.data --time ... printed:
//   10%/2:           "start time 0: 5387959611738, end time 0: 5387979874841"
//   0%-10%,30%-40%:  "start time 0: 5387939348633, end time 0: 5387959611737"
//                    "start time 1: 5388000137947, end time 1: 5388020401050"
TEST(TimeFilter, PercentTimeRanges) {
  const SampleTimeBounds bounds{5387939348633ULL, 5388141979678ULL};
  std::vector<TimeRange> r;
  ASSERT_EQ(parse_time_ranges("10%/2", &r, bounds), "");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].start, 5387959611738ULL);
  EXPECT_EQ(r[0].end, 5387979874841ULL);
  ASSERT_EQ(parse_time_ranges("0%-10%,30%-40%", &r, bounds), "");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].start, 5387939348633ULL);
  EXPECT_EQ(r[0].end, 5387959611737ULL);
  EXPECT_EQ(r[1].start, 5388000137947ULL);
  EXPECT_EQ(r[1].end, 5388020401050ULL);
  // Without the file's sample times perf refuses percentages.
  EXPECT_NE(parse_time_ranges("10%/2", &r), "");
}

}  // namespace
}  // namespace tperf::analysis
