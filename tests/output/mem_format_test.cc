// The data_src decoder against strings worked out by hand from the bit layout of
// perf_mem_data_src (op 0-4, lvl 5-18, snoop 19-23, lock 24-25, dtlb 26-32, lvl_num 33-36,
// remote 37, snoopx 38-39, blk 40-42, hops 43-45) and perf 6.1's tables.
#include "output/mem_format.h"

#include <gtest/gtest.h>

#include <string>

namespace tperf::output {
namespace {

TEST(MemFormat, DecodesFields) {
  // 0x68100142: op 0x02 LOAD; lvl (0x68100142 >> 5) & 0x3fff = 0x000a = HIT|L1; snoop
  // (>> 19) & 0x1f = 0x02 None; lock (>> 24) & 3 = 0 -> "No"; dtlb (>> 26) = 0x1a = HIT|L1|L2.
  const uint64_t v = 0x68100142;
  const DataSrc d = DataSrc::decode(v);
  EXPECT_EQ(d.op, 2u);
  EXPECT_EQ(d.lvl, 0xau);
  EXPECT_EQ(d.snoop, 2u);
  EXPECT_EQ(d.lock, 0u);
  EXPECT_EQ(d.dtlb, 0x1au);
  EXPECT_EQ(script_mem_info(v), "|OP LOAD|LVL L1 hit|SNP None|TLB L1 or L2 hit|LCK No|BLK  N/A");
}

TEST(MemFormat, LevelTexts) {
  // lvl MISS|L3 (0x44): "L3 miss".
  EXPECT_EQ(mem_lvl_text(0x44ULL << 5), "L3 miss");
  // lvl NA|HIT (0x3): the NA bit is named, then " hit".
  EXPECT_EQ(mem_lvl_text(0x3ULL << 5), "N/A hit");
  // Nothing set: "N/A".
  EXPECT_EQ(mem_lvl_text(0), "N/A");
  // lvl HIT (2), lvl_num 4: "L4 hit"; with remote (bit 37): "Remote L4 hit".
  EXPECT_EQ(mem_lvl_text(2ULL << 5 | 4ULL << 33), "L4 hit");
  EXPECT_EQ(mem_lvl_text(2ULL << 5 | 4ULL << 33 | 1ULL << 37), "Remote L4 hit");
  // lvl MISS, lvl_num PMEM (0xe): "PMEM miss".
  EXPECT_EQ(mem_lvl_text(4ULL << 5 | 0xeULL << 33), "PMEM miss");
  // lvl HIT|L3 with lvl_num 3: both are named (perf 6.1 prints this for such a file: the
  // MemSamplesE2E files have one).
  EXPECT_EQ(mem_lvl_text(0x42ULL << 5 | 3ULL << 33), "L3 or L3 hit");
  // hops 2 (bit 43) replaces the level bits: "Remote node, same socket RAM miss".
  EXPECT_EQ(mem_lvl_text(4ULL << 5 | 0xdULL << 33 | 1ULL << 37 | 2ULL << 43), "Remote node, same socket RAM miss");
}

TEST(MemFormat, SnoopTlbLockBlockTexts) {
  EXPECT_EQ(mem_snoop_text(0x14ULL << 19), "Hit or HitM");
  EXPECT_EQ(mem_snoop_text(0), "N/A");
  EXPECT_EQ(mem_snoop_text(2ULL << 19 | 1ULL << 38), "None or Fwd");  // snoopx FWD
  EXPECT_EQ(mem_tlb_text(0x24ULL << 26), "Walker miss");
  EXPECT_EQ(mem_tlb_text(0x18ULL << 26), "L1 or L2");
  EXPECT_EQ(mem_tlb_text(0x2ULL << 26), "N/A hit");
  EXPECT_EQ(mem_lock_text(2ULL << 24), "Yes");
  EXPECT_EQ(mem_lock_text(3ULL << 24), "N/A");
  EXPECT_EQ(mem_blk_text(6ULL << 40), " Data Addr");
  EXPECT_EQ(mem_blk_text(0), " N/A");
  EXPECT_EQ(mem_op_text(0), "No");
  EXPECT_EQ(mem_op_text(8), "PFETCH");
}

TEST(MemFormat, ColumnPadsToTheWidestSoFar) {
  DataSrcColumn col;
  std::string a, b, c;
  col.append(a, 0x44ULL << 5 | 2);  // LOAD, L3 miss
  col.append(b, 2);                 // LOAD, lvl N/A: shorter, padded to the first
  EXPECT_EQ(a, "             882 |OP LOAD|LVL L3 miss|SNP N/A|TLB N/A|LCK No|BLK  N/A");
  EXPECT_EQ(b.size(), a.size());
  col.append(c, 0);
  EXPECT_EQ(c.size(), a.size());
}

}  // namespace
}  // namespace tperf::output
