// analysis::diff_hists on hand-made histograms: which entries pair across files (by symbol
// name, not by the Symbol object), the computed values, and perf diff's row order for each
// -c method. Expected values are worked out by hand from the periods below.
#include "analysis/diff.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "session/machine.h"
#include "symbols/symbol_table.h"

namespace tperf::analysis {
namespace {

symbols::Symbol make_symbol(const char* name, uint64_t start, uint64_t end) {
  symbols::Symbol s;
  s.start = start;
  s.end = end;
  s.name_ptr = name;
  s.name_len = static_cast<uint32_t>(std::string_view(name).size());
  return s;
}

HistEntry at(const symbols::Symbol& sym) {
  HistEntry e;
  e.loc.sym = &sym;
  e.loc.sym_start = sym.start;
  return e;
}

// Baseline: a 60, b 40 (total 100). New file (its own Symbol objects): a 30, c 70 (total 100).
struct Files {
  symbols::Symbol a_old = make_symbol("a", 0x100, 0x200), b_old = make_symbol("b", 0x200, 0x300);
  symbols::Symbol a_new = make_symbol("a", 0x100, 0x200), c_new = make_symbol("c", 0x300, 0x400);
  Hist base{{SortKey::kDso, SortKey::kSym}};
  Hist other{{SortKey::kDso, SortKey::kSym}};
  Files() {
    base.add(at(a_old), 60);
    base.add(at(b_old), 40);
    other.add(at(a_new), 30);
    other.add(at(c_new), 70);
  }
  Diff run(const DiffOptions& o) {
    const Hist* others[] = {&other};
    return diff_hists(base, others, o);
  }
};

std::string names(const Diff& d) {
  std::string s;
  for (const DiffRow& r : d.rows) s += std::string(r.keys->loc.sym->name());
  return s;
}

TEST(DiffHists, PairsBySymbolAddressAndComputesDeltas) {
  Files f;
  Diff d = f.run({});
  EXPECT_EQ(d.base_total, 100u);
  ASSERT_EQ(d.rows.size(), 3u);
  // Default delta-abs: c (+70) before a (-30); b has nothing to compare with and goes last.
  EXPECT_EQ(names(d), "cab");
  const DiffRow& c = d.rows[0];
  EXPECT_EQ(c.base, nullptr);
  EXPECT_EQ(c.keys_hist, 1u);
  EXPECT_DOUBLE_EQ(c.delta[0], 70.0);
  const DiffRow& a = d.rows[1];
  ASSERT_NE(a.base, nullptr);
  EXPECT_EQ(a.base->period, 60u);
  ASSERT_NE(a.pairs[0], nullptr);
  EXPECT_EQ(a.pairs[0]->period, 30u);
  EXPECT_DOUBLE_EQ(a.delta[0], -30.0);
  EXPECT_DOUBLE_EQ(a.ratio[0], 0.5);
  const DiffRow& b = d.rows[2];
  EXPECT_EQ(b.pairs[0], nullptr);
  EXPECT_EQ(b.base->period, 40u);
}

TEST(DiffHists, SymbolsThatMovedStillPairByName) {
  // As perf diff 6.1 does for a rebuilt binary (seen on the diff_old/diff_new recordings: main
  // moved and still paired).
  Files f;
  symbols::Symbol moved = make_symbol("b", 0x280, 0x300);
  f.other.add(at(moved), 10);
  Diff d = f.run({});
  ASSERT_EQ(d.rows.size(), 3u);
  // New total 110: c +63.6, a 27.3 - 60 = -32.7, b 9.1 - 40 = -30.9 points.
  EXPECT_EQ(names(d), "cab");
  EXPECT_NEAR(d.rows[0].delta[0], 7000.0 / 110, 1e-9);
  EXPECT_NEAR(d.rows[1].delta[0], 3000.0 / 110 - 60, 1e-9);
  EXPECT_NEAR(d.rows[2].delta[0], 1000.0 / 110 - 40, 1e-9);
  ASSERT_NE(d.rows[2].pairs[0], nullptr);
  EXPECT_EQ(d.rows[2].pairs[0]->period, 10u);
}

TEST(DiffHists, OrderFollowsTheComputeMethod) {
  Files f;
  DiffOptions o;
  o.compute = DiffCompute::kDelta;
  // Signed: +70 before -30.
  EXPECT_EQ(names(f.run(o)), "cab");
  o.compute = DiffCompute::kRatio;
  // A ratio needs a baseline: a (0.5) before c, which has none.
  EXPECT_EQ(names(f.run(o)), "acb");
  o.compute = DiffCompute::kWdiff;
  o.wdiff_w1 = 1;
  o.wdiff_w2 = 3;
  Diff d = f.run(o);
  EXPECT_EQ(names(d), "acb");
  EXPECT_EQ(d.rows[0].wdiff[0], 30 * 3 - 60 * 1);
}

TEST(DiffHists, MissingEventInTheOtherFileLeavesTheBaseline) {
  Files f;
  const Hist* none[] = {nullptr};
  Diff d = diff_hists(f.base, none, {});
  ASSERT_EQ(d.rows.size(), 2u);
  // Ties on the computed column: by baseline period.
  EXPECT_EQ(names(d), "ab");
  EXPECT_EQ(d.rows[0].pairs[0], nullptr);
}

// Two symbols of one name in two DSOs: a program's _start and its dynamic loader's. perf diff 6.1
// -s sym shows them as one row, baseline the sum of both, paired with the new file's _start
// whatever its DSO (seen on a DiffE2e recording: ld.so _start 0.10% and diffprog _start 0.05% in
// the baseline, ld.so _start 0.11% in the new file; perf printed `0.15% -0.04% [.] _start`).
// With the dso key they stay two rows, as in `perf diff -s dso,sym` of the same files.
TEST(DiffHists, SameNamedSymbolsOfTwoDsosAreOneRowWithoutTheDsoKey) {
  const std::string loader_name = "ld-linux-x86-64.so.2", prog_name = "diffprog";
  session::Dso loader, prog;
  loader.name = &loader_name;
  prog.name = &prog_name;
  symbols::Symbol loader_start = make_symbol("_start", 0x1000, 0x1010);
  symbols::Symbol prog_start = make_symbol("_start", 0x40, 0x70);
  symbols::Symbol new_start = make_symbol("_start", 0x1000, 0x1010);
  symbols::Symbol main_old = make_symbol("main", 0x100, 0x200), main_new = make_symbol("main", 0x100, 0x200);
  auto in = [](const session::Dso& dso, const symbols::Symbol& sym) {
    HistEntry e = at(sym);
    e.loc.dso = &dso;
    return e;
  };
  for (const std::vector<SortKey>& keys : {std::vector<SortKey>{SortKey::kSym}, {SortKey::kDso, SortKey::kSym}}) {
    const bool by_dso = keys.size() == 2;
    SCOPED_TRACE(by_dso ? "dso,sym" : "sym");
    Hist base(keys), other(keys);
    base.add(in(loader, loader_start), 2);
    base.add(in(prog, prog_start), 1);
    base.add(in(prog, main_old), 97);
    other.add(in(loader, new_start), 3);
    other.add(in(prog, main_new), 97);
    const Hist* others[] = {&other};
    Diff d = diff_hists(base, others, {});
    size_t start_rows = 0;
    for (const DiffRow& r : d.rows) {
      if (r.keys->loc.sym->name() != "_start") continue;
      ++start_rows;
      ASSERT_NE(r.base, nullptr);
      if (!by_dso) {
        EXPECT_EQ(r.base->period, 3u);  // both baseline entries
        ASSERT_NE(r.pairs[0], nullptr);
        EXPECT_EQ(r.pairs[0]->period, 3u);
        EXPECT_DOUBLE_EQ(r.delta[0], 0.0);
      } else if (r.base->loc.dso == &prog) {
        EXPECT_EQ(r.base->period, 1u);
        EXPECT_EQ(r.pairs[0], nullptr);  // the new file's _start is the loader's
      } else {
        EXPECT_EQ(r.base->period, 2u);
        ASSERT_NE(r.pairs[0], nullptr);
        EXPECT_EQ(r.pairs[0]->period, 3u);
      }
    }
    EXPECT_EQ(start_rows, by_dso ? 2u : 1u);
    // The hists themselves keep both entries (perf report -s sym shows two _start lines).
    EXPECT_EQ(base.in_key_order().size(), 3u);
  }
}

}  // namespace
}  // namespace tperf::analysis
