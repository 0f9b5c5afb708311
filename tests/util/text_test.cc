// util/text.h: the one comma-list splitter and number-list parser every command line and the
// sysfs CPU files go through. Expected values are the lists written out by hand.
#include "util/text.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tperf::util {
namespace {

TEST(SplitCommas, ItemsInOrderWithoutEmptyOnes) {
  EXPECT_EQ(split_commas("a,b,,c"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(split_commas(",x,"), (std::vector<std::string>{"x"}));
  EXPECT_EQ(split_commas("comm,dso,sym"), (std::vector<std::string>{"comm", "dso", "sym"}));
  EXPECT_TRUE(split_commas("").empty());
  EXPECT_TRUE(split_commas(",,").empty());
  // Spaces belong to the item (perf's --comm takes names with spaces).
  EXPECT_EQ(split_commas("my prog,b"), (std::vector<std::string>{"my prog", "b"}));
}

TEST(ParseNumberList, NumbersAndRanges) {
  std::vector<int32_t> v;
  ASSERT_TRUE(parse_number_list("0-3,8", true, &v));
  EXPECT_EQ(v, (std::vector<int32_t>{0, 1, 2, 3, 8}));
  v.clear();
  ASSERT_TRUE(parse_number_list("12,5", false, &v));
  EXPECT_EQ(v, (std::vector<int32_t>{12, 5}));
  v.clear();
  // A sysfs file's trailing newline.
  ASSERT_TRUE(parse_number_list("0-1\n", true, &v));
  EXPECT_EQ(v, (std::vector<int32_t>{0, 1}));
  v.clear();
  ASSERT_TRUE(parse_number_list("", false, &v));
  EXPECT_TRUE(v.empty());
}

TEST(ParseNumberList, RefusesWhatIsNotAList) {
  std::vector<int32_t> v;
  EXPECT_FALSE(parse_number_list("0-3", false, &v));  // a range where only numbers are allowed
  EXPECT_FALSE(parse_number_list("4-3", true, &v));   // backwards
  EXPECT_FALSE(parse_number_list("a", true, &v));
  EXPECT_FALSE(parse_number_list("1,x", true, &v));
  EXPECT_FALSE(parse_number_list("-1", true, &v));
  EXPECT_FALSE(parse_number_list("3-", true, &v));
  EXPECT_FALSE(parse_number_list("99999999999", false, &v));  // would overflow
  EXPECT_FALSE(parse_number_list("0-99999999", true, &v));    // a range of a hundred million CPUs
}

}  // namespace
}  // namespace tperf::util
