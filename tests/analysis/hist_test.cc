// Hist's emulation of when perf 6.1 has worked out an entry's srcline (the column width and
// the cut of the others follow from it): perf's input tree compares a sample's entry with the
// entries that share its keys before srcline, so a srcline is known once two samples (or
// callchain entries) share those keys.
#include "analysis/hist.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analysis/tree_replay.h"
#include "session/machine.h"
#include "symbols/symbol_table.h"

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

// The output sort compares numbers worked out per key from the entries' values (Hist's key
// ranks) where it compared the values: entries whose values are equal but not the same object
// (two comm strings "cc1", two DSOs shown as "libx.so", two symbols named "main"), entries
// without a comm, a DSO or a symbol. Its order must be the order the comparison of the values
// gives: perf's tree replayed with compare_key() on every key, as the sort was written before.
TEST(HistOrder, TiesFallToTheKeysAsTheirValuesCompare) {
  session::StringPool strings;
  session::DsoTable dsos(strings);
  const session::Dso* libx_a = dsos.intern("/usr/lib/a/libx.so", {}, false);
  const session::Dso* libx_b = dsos.intern("/opt/b/libx.so", {}, false);
  const session::Dso* cc1_dso = dsos.intern("/usr/lib/gcc/cc1", {}, false);
  const session::Dso* kernel = dsos.intern("[kernel.kallsyms]", {}, true);
  ASSERT_EQ(dso_column_name(libx_a), dso_column_name(libx_b));
  const std::string cc1_a = "cc1", cc1_b = "cc1", as = "as", bash = "bash";
  const std::vector<const std::string*> comms = {&cc1_a, &cc1_b, &as, &bash, nullptr};
  const std::vector<const session::Dso*> dso_list = {libx_a, libx_b, cc1_dso, kernel, nullptr};
  auto symbol = [](uint64_t start, const char* name) {
    symbols::Symbol s;
    s.start = start;
    s.end = start + 0x40;
    s.name_ptr = name;
    s.name_len = static_cast<uint32_t>(std::string_view(name).size());
    return s;
  };
  const symbols::Symbol main_1 = symbol(0x1000, "main"), main_2 = symbol(0x8000, "main"),
                        init = symbol(0x2000, "init"), zeta = symbol(0x400, "zeta");
  const std::vector<const symbols::Symbol*> syms = {&main_1, &main_2, &init, &zeta, nullptr};

  const std::vector<std::vector<SortKey>> key_sets = {
      {SortKey::kComm, SortKey::kDso, SortKey::kSym}, {SortKey::kSym}, {SortKey::kDso, SortKey::kSym},
      {SortKey::kComm, SortKey::kSym}, {SortKey::kDso}, {SortKey::kComm, SortKey::kTid, SortKey::kSym}};
  for (const std::vector<SortKey>& keys : key_sets) {
    Hist hist(keys);
    // Every comm, DSO and symbol (or one of four addresses without one) once, with a period of
    // 1 or 2 (every other one), in an order that mixes them.
    int i = 0;
    for (size_t s = 0; s < syms.size() + 3; ++s) {
      for (const session::Dso* dso : dso_list) {
        for (const std::string* comm : comms) {
          HistEntry e;
          e.comm = comm;
          e.tid = e.pid = 100 + i % 3;
          e.loc.dso = dso;
          e.loc.sym = s < syms.size() ? syms[s] : nullptr;
          e.loc.sym_start = e.loc.sym ? e.loc.sym->start : 0;
          e.loc.addr = e.loc.sym ? e.loc.sym->start + 8 : 0x4000 + 0x10 * s;
          hist.add(e, 1 + (i++ % 2));
        }
      }
    }
    const std::vector<const HistEntry*> in = hist.in_key_order();
    ASSERT_GE(in.size(), 4u);  // by DSO alone: libx.so twice is one entry
    auto before = [&](const HistEntry* a, const HistEntry* b) {
      if (a->period != b->period) return a->period > b->period;
      for (SortKey k : keys) {
        if (const int c = hist.compare_key(k, *a, *b)) return c < 0;
      }
      return false;
    };
    EXPECT_EQ(hist.sorted(false), replay_tree(in, before)) << "keys " << keys.size() << " first " << static_cast<int>(keys[0]);
  }
}

}  // namespace
}  // namespace tperf::analysis
