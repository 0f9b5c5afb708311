// Hist's emulation of when perf 6.1 has worked out an entry's srcline (the column width and
// the cut of the others follow from it): perf's input tree compares a sample's entry with the
// entries that share its keys before srcline, so a srcline is known once two samples (or
// callchain entries) share those keys.
#include "analysis/hist.h"

#include <gtest/gtest.h>

#include <string>

namespace tperf::analysis {
namespace {

HistEntry at(uint64_t addr, const std::string* srcline) {
  HistEntry e;
  e.loc.addr = addr;  // no symbol: the sym key compares addresses
  e.srcline = srcline;
  return e;
}

TEST(HistSrcline, KnownOnceTwoLookupsShareThePrecedingKeys) {
  const std::string a1 = "a.c:1", a2 = "a.c:2", b3 = "b.c:3";
  Hist hist({SortKey::kSym, SortKey::kSrcline});
  hist.add(at(0x10, &a1), 1);
  hist.add(at(0x10, &a2), 1);  // same symbol (address), another line: both worked out
  hist.add(at(0x20, &b3), 1);  // alone at its address: never compared on srcline
  ASSERT_EQ(hist.size(), 3u);
  for (const HistEntry* e : hist.in_key_order()) {
    const bool lonely = e->srcline == &b3;
    EXPECT_EQ(hist.srcline_known(*e), !lonely) << *e->srcline;
  }
  // A second sample of the same entry is a second lookup too.
  hist.add(at(0x20, &b3), 1);
  for (const HistEntry* e : hist.in_key_order()) EXPECT_TRUE(hist.srcline_known(*e)) << *e->srcline;
}

TEST(HistSrcline, FirstKeyIsKnownWithTwoSamples) {
  const std::string a1 = "a.c:1", b3 = "b.c:3";
  Hist one({SortKey::kSrcline, SortKey::kSym});
  one.add(at(0x10, &a1), 1);
  EXPECT_FALSE(one.srcline_known(*one.in_key_order()[0]));
  one.add(at(0x20, &b3), 1);
  for (const HistEntry* e : one.in_key_order()) EXPECT_TRUE(one.srcline_known(*e));
}

TEST(HistParent, EntriesSplitByParentName) {
  Hist hist({SortKey::kSym, SortKey::kParent});
  const std::string main_a = "main", main_b = "main";  // equal names in different storage
  HistEntry x = at(0x10, nullptr), y = at(0x10, nullptr), z = at(0x10, nullptr);
  x.parent = main_a;
  y.parent = main_b;
  hist.add(x, 1);
  hist.add(y, 2);
  hist.add(z, 4);  // "[other]"
  ASSERT_EQ(hist.size(), 2u);
  auto rows = hist.sorted(false);
  EXPECT_TRUE(rows[0]->parent.empty());
  EXPECT_EQ(rows[0]->period, 4u);
  EXPECT_EQ(rows[1]->parent, "main");
  EXPECT_EQ(rows[1]->period, 3u);
}

}  // namespace
}  // namespace tperf::analysis
