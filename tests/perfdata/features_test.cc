// Features::parse on payloads built byte by byte here (both byte orders, malformed and
// truncated ones), and on the corpus files with values read from `perf report --header-only`.
#include "perfdata/features.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "perfdata/byte_writer.h"
#include "perfdata/reader.h"
#include "test_util.h"

namespace tperf::perfdata {
namespace {

// A payload under construction, in host order or swapped.
struct Payload {
  std::vector<uint8_t> bytes;
  ByteWriter w;
  explicit Payload(bool swap = false) : w(bytes, swap) {}
  // perf_header_string: u32 len (multiple of 64, NUL included), string, zeros.
  Payload& str(const std::string& s) {
    uint32_t len = static_cast<uint32_t>((s.size() + 1 + 63) / 64 * 64);
    w.u32(len);
    w.padded_string(s, 64);
    return *this;
  }
  Payload& u8(uint8_t v) { w.u8(v); return *this; }
  Payload& u16(uint16_t v) { w.u16(v); return *this; }
  Payload& u32(uint32_t v) { w.u32(v); return *this; }
  Payload& u64(uint64_t v) { w.u64(v); return *this; }
  Payload& raw(const std::vector<uint8_t>& b) { w.bytes(b); return *this; }
};

Features parse_one(unsigned bit, const std::vector<uint8_t>& payload, bool swap = false, uint64_t offset = 0x100) {
  Features f;
  f.parse(bit, payload, swap, offset);
  return f;
}

TEST(FeatureName, PerfSpellings) {
  // As perf 6.1 lists them after "missing features:".
  EXPECT_EQ(feature_name(kFeatTracingData), "TRACING_DATA");
  EXPECT_EQ(feature_name(kFeatBuildId), "BUILD_ID");
  EXPECT_EQ(feature_name(kFeatHostname), "HOSTNAME");
  EXPECT_EQ(feature_name(kFeatNumaTopology), "NUMA_TOPOLOGY");
  EXPECT_EQ(feature_name(kFeatBpfProgInfo), "BPF_PROG_INFO");
  EXPECT_EQ(feature_name(kFeatCpuPmuCaps), "CPU_PMU_CAPS");
  EXPECT_EQ(feature_name(kFeatHybridTopology), "HYBRID_TOPOLOGY");
  EXPECT_EQ(feature_name(kFeatPmuCaps), "PMU_CAPS");
  EXPECT_EQ(feature_name(kFeatSimpleperfFile), "SIMPLEPERF_FILE");
  EXPECT_EQ(feature_name(kFeatSimpleperfFile2), "SIMPLEPERF_FILE2");
  EXPECT_EQ(feature_name(77), "feature_77");
  EXPECT_EQ(feature_name(255), "feature_255");
}

TEST(FeaturesParse, HeaderStringIsPaddedTo64) {
  Payload p;
  p.str("vm");
  ASSERT_EQ(p.bytes.size(), 68u);  // as perf writes hostname "vm"
  Features f = parse_one(kFeatHostname, p.bytes);
  EXPECT_EQ(f.hostname, "vm");
  EXPECT_TRUE(f.has(kFeatHostname));
  EXPECT_TRUE(f.parsed.test(kFeatHostname));
  EXPECT_EQ(f.raw.at(kFeatHostname), p.bytes);
  EXPECT_TRUE(f.warnings.empty());
}

TEST(FeaturesParse, StringWithoutNulStopsAtItsLength) {
  Payload p;
  p.u32(4).raw({'a', 'b', 'c', 'd', 'e', 'f'});
  Features f = parse_one(kFeatArch, p.bytes);
  EXPECT_EQ(f.arch, "abcd");
  EXPECT_TRUE(f.warnings.empty());
}

TEST(FeaturesParse, TruncatedStringIsAWarningWithTheOffset) {
  Payload p;
  p.u32(64).raw({'x', 'y'});
  Features f = parse_one(kFeatOsrelease, p.bytes, false, 0x1234);
  ASSERT_EQ(f.warnings.size(), 1u);
  EXPECT_EQ(f.warnings[0].rfind("feature OSRELEASE at offset 0x1234: ", 0), 0u) << f.warnings[0];
  EXPECT_TRUE(f.has(kFeatOsrelease));
  EXPECT_FALSE(f.parsed.test(kFeatOsrelease));
  EXPECT_EQ(f.raw.at(kFeatOsrelease), p.bytes);
  EXPECT_EQ(f.osrelease, "");
}

TEST(FeaturesParse, NrcpusIsAvailableThenOnline) {
  for (bool swap : {false, true}) {
    Payload p(swap);
    p.u32(8).u32(4);
    Features f = parse_one(kFeatNrcpus, p.bytes, swap);
    EXPECT_EQ(f.nr_cpus_available, 8u);
    EXPECT_EQ(f.nr_cpus_online, 4u);
  }
  Features f = parse_one(kFeatNrcpus, {1, 0, 0, 0});
  EXPECT_EQ(f.warnings.size(), 1u);
}

TEST(FeaturesParse, TotalMemAndCmdline) {
  for (bool swap : {false, true}) {
    Payload m(swap);
    m.u64(24682416);
    EXPECT_EQ(parse_one(kFeatTotalMem, m.bytes, swap).total_mem_kb, 24682416u);

    Payload c(swap);
    c.u32(3).str("/usr/bin/perf").str("record").str("it's");
    Features f = parse_one(kFeatCmdline, c.bytes, swap);
    EXPECT_EQ(f.cmdline, (std::vector<std::string>{"/usr/bin/perf", "record", "it's"}));
  }
  // A count the payload cannot hold is refused before anything is allocated.
  Payload huge;
  huge.u32(0xffffffff).str("a");
  Features f = parse_one(kFeatCmdline, huge.bytes);
  EXPECT_EQ(f.warnings.size(), 1u);
  EXPECT_TRUE(f.cmdline.empty());
}

PerfEventAttr make_attr(uint32_t size) {
  PerfEventAttr a;
  a.type = kTypeSoftware;
  a.size = size;
  a.config = 9;
  a.sample_period = 4000;
  a.sample_type = kSampleIp | kSampleTid | kSampleTime | kSamplePeriod;
  a.read_format = kReadId | kReadLost;
  a.set_flag(kFlagDisabled);
  a.set_flag(kFlagFreq);
  a.set_flag(kFlagSampleIdAll);
  a.flags |= 3ULL << kFlagPreciseIp0;
  a.clockid = 1;
  a.sig_data = 77;
  a.config3 = 0x55;
  return a;
}

std::vector<uint8_t> event_desc_payload(bool swap, uint32_t attr_size, const std::vector<PerfEventAttr>& attrs,
                                        const std::vector<std::string>& names,
                                        const std::vector<std::vector<uint64_t>>& ids) {
  Payload p(swap);
  p.u32(static_cast<uint32_t>(attrs.size())).u32(attr_size);
  for (size_t i = 0; i < attrs.size(); ++i) {
    PerfEventAttr a = attrs[i];
    uint32_t declared = a.size;
    a.size = attr_size;  // encode attr_size bytes, then restore the declared size field
    std::vector<uint8_t> enc;
    if (swap) {
      encode_attr_swapped(a, enc);
    } else {
      encode_attr(a, enc);
    }
    ByteWriter fix(enc, swap);
    fix.patch_u32(4, declared);
    p.raw(enc);
    p.u32(static_cast<uint32_t>(ids[i].size())).str(names[i]);
    for (uint64_t id : ids[i]) p.u64(id);
  }
  return p.bytes;
}

TEST(FeaturesParse, EventDescBothByteOrders) {
  for (bool swap : {false, true}) {
    auto payload = event_desc_payload(swap, 128, {make_attr(128), make_attr(128)}, {"cpu-clock:pppH", "dummy:u"},
                                      {{25, 26}, {}});
    Features f = parse_one(kFeatEventDesc, payload, swap);
    ASSERT_TRUE(f.warnings.empty()) << f.warnings[0];
    ASSERT_EQ(f.event_desc.size(), 2u);
    EXPECT_EQ(f.event_desc[0].name, "cpu-clock:pppH");
    EXPECT_EQ(f.event_desc[0].ids, (std::vector<uint64_t>{25, 26}));
    EXPECT_EQ(f.event_desc[1].name, "dummy:u");
    EXPECT_TRUE(f.event_desc[1].ids.empty());
    const PerfEventAttr& a = f.event_desc[0].attr;
    EXPECT_EQ(a.type, kTypeSoftware);
    EXPECT_EQ(a.size, 128u);
    EXPECT_EQ(a.config, 9u);
    EXPECT_EQ(a.sample_period, 4000u);
    EXPECT_EQ(a.read_format, kReadId | kReadLost);
    EXPECT_TRUE(a.flag(kFlagDisabled));
    EXPECT_TRUE(a.freq());
    EXPECT_TRUE(a.sample_id_all());
    EXPECT_EQ(a.precise_ip(), 3u);
    EXPECT_EQ(a.clockid, 1);
    EXPECT_EQ(a.sig_data, 77u);
    EXPECT_EQ(a.config3, 0u);  // not inside a 128-byte attr
  }
}

TEST(FeaturesParse, EventDescStrideIsTheSectionAttrSize) {
  // A 136-byte attr (perf >= 6.3) whose own size field says something else: the section's
  // attr_size decides where the next field starts, as in perf.
  auto payload = event_desc_payload(false, 136, {make_attr(80)}, {"cycles"}, {{1, 2, 3}});
  Features f = parse_one(kFeatEventDesc, payload);
  ASSERT_TRUE(f.warnings.empty());
  ASSERT_EQ(f.event_desc.size(), 1u);
  EXPECT_EQ(f.event_desc[0].attr.size, 80u);
  EXPECT_EQ(f.event_desc[0].attr.config3, 0x55u);
  EXPECT_EQ(f.event_desc[0].name, "cycles");
  EXPECT_EQ(f.event_desc[0].ids, (std::vector<uint64_t>{1, 2, 3}));
}

TEST(FeaturesParse, EventDescMalformed) {
  auto good = event_desc_payload(false, 128, {make_attr(128)}, {"cycles"}, {{1, 2}});
  // Every truncation is a warning, never an exception.
  for (size_t n = 0; n < good.size(); ++n) {
    std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
    Features f;
    ASSERT_NO_THROW(f.parse(kFeatEventDesc, cut, false, 0));
    EXPECT_EQ(f.warnings.size(), 1u) << n;
    EXPECT_FALSE(f.parsed.test(kFeatEventDesc));
  }
  // attr_size below 64.
  Payload small;
  small.u32(1).u32(32).raw(std::vector<uint8_t>(64, 0));
  EXPECT_EQ(parse_one(kFeatEventDesc, small.bytes).warnings.size(), 1u);
  // A huge id count.
  auto big = good;
  ByteWriter w(big);
  w.patch_u32(8 + 128, 0x7fffffff);
  Features f = parse_one(kFeatEventDesc, big);
  EXPECT_EQ(f.warnings.size(), 1u);
  EXPECT_TRUE(f.event_desc.empty());
}

// One BUILD_ID feature record: {header, pid, build_id[20], size, res[3], filename} with the
// filename NUL-padded to 64, so sizes are not multiples of 8.
void build_id_record(Payload& p, uint16_t misc, int32_t pid, uint8_t id_size, const std::string& file) {
  size_t fname_len = (file.size() + 1 + 63) / 64 * 64;
  p.u32(0).u16(misc).u16(static_cast<uint16_t>(36 + fname_len));
  p.u32(static_cast<uint32_t>(pid));
  for (uint8_t i = 0; i < 20; ++i) p.u8(static_cast<uint8_t>(0xa0 + i));
  p.u8(id_size).u8(0).u8(0).u8(0);
  p.w.padded_string(file, 64);
}

TEST(FeaturesParse, BuildIdRecordsIterateByTheirSize) {
  for (bool swap : {false, true}) {
    Payload p(swap);
    build_id_record(p, kMiscBuildIdSize | kMiscKernel, -1, 20, "[kernel.kallsyms]");
    build_id_record(p, kMiscBuildIdSize | kMiscUser, 1234, 8, "/usr/lib/libc.so.6");
    build_id_record(p, kMiscUser, 7, 3, "/bin/sleep");  // size byte not valid: 20 bytes
    EXPECT_EQ(p.bytes.size(), 300u);                    // three 100-byte records
    Features f = parse_one(kFeatBuildId, p.bytes, swap);
    ASSERT_TRUE(f.warnings.empty()) << f.warnings[0];
    ASSERT_EQ(f.build_ids.size(), 3u);
    EXPECT_EQ(f.build_ids[0].misc, kMiscBuildIdSize | kMiscKernel);
    EXPECT_EQ(f.build_ids[0].pid, -1);
    EXPECT_EQ(f.build_ids[0].build_id.size(), 20u);
    EXPECT_EQ(f.build_ids[0].build_id[0], 0xa0);
    EXPECT_EQ(f.build_ids[0].filename, "[kernel.kallsyms]");
    EXPECT_EQ(f.build_ids[1].pid, 1234);
    EXPECT_EQ(f.build_ids[1].build_id.size(), 8u);
    EXPECT_EQ(f.build_ids[1].filename, "/usr/lib/libc.so.6");
    EXPECT_EQ(f.build_ids[2].build_id.size(), 20u);
    EXPECT_EQ(f.build_ids[2].filename, "/bin/sleep");
  }
}

TEST(FeaturesParse, BuildIdOldLayoutWithoutPid) {
  // perf before 2.6.35 wrote {header, build_id[24], filename}: read with the current layout
  // the kernel's name loses its first four characters, which is how perf recognises it.
  Payload p;
  std::string file = "[kernel.kallsyms]";
  p.u32(0).u16(kMiscKernel).u16(static_cast<uint16_t>(32 + 64));
  for (uint8_t i = 0; i < 24; ++i) p.u8(i);
  p.w.padded_string(file, 64);
  p.u32(0).u16(kMiscGuestKernel).u16(static_cast<uint16_t>(32 + 64));
  for (uint8_t i = 0; i < 24; ++i) p.u8(i);
  p.w.padded_string("[guest.kernel]", 64);
  Features f = parse_one(kFeatBuildId, p.bytes);
  ASSERT_TRUE(f.warnings.empty()) << f.warnings[0];
  ASSERT_EQ(f.build_ids.size(), 2u);
  EXPECT_EQ(f.build_ids[0].filename, "[kernel.kallsyms]");
  EXPECT_EQ(f.build_ids[0].pid, -1);
  EXPECT_EQ(f.build_ids[0].build_id.size(), 20u);
  EXPECT_EQ(f.build_ids[0].build_id[19], 19);
  EXPECT_EQ(f.build_ids[1].pid, 0);
}

TEST(FeaturesParse, BuildIdBadSizeKeepsTheEntriesBefore) {
  Payload p;
  build_id_record(p, kMiscBuildIdSize | kMiscUser, 1, 20, "/a");
  p.u32(0).u16(0).u16(0);  // a record of size 0 would loop forever
  Features f = parse_one(kFeatBuildId, p.bytes, false, 0x500);
  ASSERT_EQ(f.warnings.size(), 1u);
  EXPECT_NE(f.warnings[0].find("feature BUILD_ID at offset 0x500: offset 0x564: "), std::string::npos) << f.warnings[0];
  ASSERT_EQ(f.build_ids.size(), 1u);
  EXPECT_EQ(f.build_ids[0].filename, "/a");

  // A record running past the section end.
  Payload q;
  build_id_record(q, kMiscUser, 1, 20, "/a");
  q.bytes.resize(q.bytes.size() - 1);
  EXPECT_EQ(parse_one(kFeatBuildId, q.bytes).warnings.size(), 1u);
}

TEST(FeaturesParse, BuildIdEntriesAccumulateAcrossCalls) {
  Payload a, b;
  build_id_record(a, kMiscUser, 1, 20, "/a");
  build_id_record(b, kMiscUser, 2, 20, "/b");
  Features f;
  f.parse(kFeatBuildId, a.bytes, false, 0);
  f.parse(kFeatBuildId, b.bytes, false, 100);
  ASSERT_EQ(f.build_ids.size(), 2u);
  EXPECT_EQ(f.build_ids[1].filename, "/b");
}

TEST(FeaturesParse, CpuTopologyOldAndNewLayouts) {
  for (bool swap : {false, true}) {
    Features f;
    Payload n(swap);
    n.u32(2).u32(2);
    f.parse(kFeatNrcpus, n.bytes, swap, 0);

    Payload old(swap);  // perf 3.x: sibling lists only
    old.u32(1).str("0-1").u32(2).str("0").str("1");
    f.parse(kFeatCpuTopology, old.bytes, swap, 0);
    EXPECT_EQ(f.cpu_topology.core_siblings, (std::vector<std::string>{"0-1"}));
    EXPECT_EQ(f.cpu_topology.thread_siblings, (std::vector<std::string>{"0", "1"}));
    EXPECT_TRUE(f.cpu_topology.cpus.empty());
    EXPECT_FALSE(f.cpu_topology.has_die);

    Payload ids(swap);  // + core/socket ids per available cpu
    ids.u32(1).str("0-1").u32(2).str("0").str("1").u32(0).u32(0).u32(1).u32(0);
    f.parse(kFeatCpuTopology, ids.bytes, swap, 0);
    ASSERT_EQ(f.cpu_topology.cpus.size(), 2u);
    EXPECT_EQ(f.cpu_topology.cpus[1].core_id, 1u);
    EXPECT_FALSE(f.cpu_topology.has_die);

    Payload die(swap);  // + die siblings and die ids
    die.raw(ids.bytes).u32(1).str("0-1").u32(0).u32(3);
    f.parse(kFeatCpuTopology, die.bytes, swap, 0);
    EXPECT_TRUE(f.cpu_topology.has_die);
    EXPECT_EQ(f.cpu_topology.die_siblings, (std::vector<std::string>{"0-1"}));
    EXPECT_EQ(f.cpu_topology.cpus[1].die_id, 3u);
    EXPECT_TRUE(f.warnings.empty());

    // Die ids cut short.
    std::vector<uint8_t> cut(die.bytes.begin(), die.bytes.end() - 2);
    f.parse(kFeatCpuTopology, cut, swap, 0);
    EXPECT_EQ(f.warnings.size(), 1u);
  }
}

TEST(FeaturesParse, NumaPmuMappingsGroupDesc) {
  for (bool swap : {false, true}) {
    Payload numa(swap);
    numa.u32(1).u32(0).u64(3893024).u64(3711580).str("0-1");
    Features f = parse_one(kFeatNumaTopology, numa.bytes, swap);
    ASSERT_EQ(f.numa_topology.size(), 1u);
    EXPECT_EQ(f.numa_topology[0].mem_total, 3893024u);
    EXPECT_EQ(f.numa_topology[0].mem_free, 3711580u);
    EXPECT_EQ(f.numa_topology[0].cpus, "0-1");

    Payload pmu(swap);
    pmu.u32(2).u32(1).str("software").u32(4294967294u).str("tool");
    f = parse_one(kFeatPmuMappings, pmu.bytes, swap);
    ASSERT_EQ(f.pmu_mappings.size(), 2u);
    EXPECT_EQ(f.pmu_mappings[1].first, 4294967294u);
    EXPECT_EQ(f.pmu_mappings[1].second, "tool");

    Payload grp(swap);
    grp.u32(2).str("{anon_group}").u32(0).u32(2).str("mygrp").u32(2).u32(2);
    f = parse_one(kFeatGroupDesc, grp.bytes, swap);
    ASSERT_EQ(f.group_desc.size(), 2u);
    EXPECT_EQ(f.group_desc[0].name, "{anon_group}");
    EXPECT_EQ(f.group_desc[1].name, "mygrp");
    EXPECT_EQ(f.group_desc[1].leader_idx, 2u);
    EXPECT_EQ(f.group_desc[1].nr_members, 2u);
    EXPECT_TRUE(f.warnings.empty());
  }
}

TEST(FeaturesParse, CacheVersionMustBeOne) {
  Payload c;
  c.u32(1).u32(1).u32(3).u32(64).u32(16384).u32(16).str("Unified").str("266240K").str("0-1");
  Features f = parse_one(kFeatCache, c.bytes);
  ASSERT_EQ(f.caches.size(), 1u);
  EXPECT_EQ(f.caches[0].level, 3u);
  EXPECT_EQ(f.caches[0].line_size, 64u);
  EXPECT_EQ(f.caches[0].sets, 16384u);
  EXPECT_EQ(f.caches[0].ways, 16u);
  EXPECT_EQ(f.caches[0].type, "Unified");
  EXPECT_EQ(f.caches[0].size, "266240K");
  EXPECT_EQ(f.caches[0].map, "0-1");

  Payload v2;
  v2.u32(2).u32(0);
  f = parse_one(kFeatCache, v2.bytes, false, 0x40);
  ASSERT_EQ(f.warnings.size(), 1u);
  EXPECT_NE(f.warnings[0].find("cache version 2"), std::string::npos);
}

TEST(FeaturesParse, FixedSizeFeatures) {
  for (bool swap : {false, true}) {
    Payload st(swap);
    st.u64(271048385000).u64(271049141000);
    Features f = parse_one(kFeatSampleTime, st.bytes, swap);
    EXPECT_EQ(f.first_sample_time, 271048385000u);
    EXPECT_EQ(f.last_sample_time, 271049141000u);

    Payload ck(swap);
    ck.u64(1);
    EXPECT_EQ(parse_one(kFeatClockid, ck.bytes, swap).clockid_res_ns, 1u);

    Payload dir(swap);
    dir.u64(1);
    EXPECT_EQ(parse_one(kFeatDirFormat, dir.bytes, swap).dir_format_version, 1u);

    Payload cz(swap);
    cz.u32(1).u32(1).u32(3).u32(7).u32(528384);
    f = parse_one(kFeatCompressed, cz.bytes, swap);
    EXPECT_EQ(f.compressed.version, 1u);
    EXPECT_EQ(f.compressed.type, 1u);
    EXPECT_EQ(f.compressed.level, 3u);
    EXPECT_EQ(f.compressed.ratio, 7u);
    EXPECT_EQ(f.compressed.mmap_len, 528384u);

    Payload cd(swap);
    cd.u32(1).u32(1).u64(1762878703344339123).u64(1642884550397);
    f = parse_one(kFeatClockData, cd.bytes, swap);
    EXPECT_EQ(f.clock_data.clockid, 1u);
    EXPECT_EQ(f.clock_data.wall_clock_ns, 1762878703344339123u);
    EXPECT_EQ(f.clock_data.clockid_ns, 1642884550397u);
    EXPECT_TRUE(f.warnings.empty());
  }
  Payload cd2;
  cd2.u32(2).u32(1).u64(1).u64(1);
  Features f = parse_one(kFeatClockData, cd2.bytes);
  EXPECT_EQ(f.warnings.size(), 1u);
  EXPECT_FALSE(f.parsed.test(kFeatClockData));
}

TEST(FeaturesParse, PmuCapsHybridTopologyMemTopologyAuxtrace) {
  for (bool swap : {false, true}) {
    Payload cpu(swap);
    cpu.u32(2).str("branches").str("32").str("pmu_name").str("skylake");
    Features f = parse_one(kFeatCpuPmuCaps, cpu.bytes, swap);
    ASSERT_EQ(f.cpu_pmu_caps.size(), 2u);
    EXPECT_EQ(f.cpu_pmu_caps[1], (std::pair<std::string, std::string>{"pmu_name", "skylake"}));

    Payload caps(swap);
    caps.u32(2).u32(1).str("max_precise").str("3").str("cpu_core").u32(0).str("cpu_atom");
    f = parse_one(kFeatPmuCaps, caps.bytes, swap);
    ASSERT_EQ(f.pmu_caps.size(), 2u);
    EXPECT_EQ(f.pmu_caps[0].pmu_name, "cpu_core");
    ASSERT_EQ(f.pmu_caps[0].caps.size(), 1u);
    EXPECT_EQ(f.pmu_caps[0].caps[0].second, "3");
    EXPECT_EQ(f.pmu_caps[1].pmu_name, "cpu_atom");
    EXPECT_TRUE(f.pmu_caps[1].caps.empty());

    Payload hy(swap);
    hy.u32(2).str("cpu_core").str("0-3").str("cpu_atom").str("4-11");
    f = parse_one(kFeatHybridTopology, hy.bytes, swap);
    ASSERT_EQ(f.hybrid_topology.size(), 2u);
    EXPECT_EQ(f.hybrid_topology[1], (std::pair<std::string, std::string>{"cpu_atom", "4-11"}));

    Payload mem(swap);
    mem.u64(1).u64(0x8000000).u64(1).u64(0).u64(0xc00000000).u64(70).u64(0x00ffffff).u64(0x3f);
    f = parse_one(kFeatMemTopology, mem.bytes, swap);
    EXPECT_EQ(f.mem_topology.block_size, 0x8000000u);
    ASSERT_EQ(f.mem_topology.nodes.size(), 1u);
    EXPECT_EQ(f.mem_topology.nodes[0].nbits, 70u);
    EXPECT_EQ(f.mem_topology.nodes[0].bitmap, (std::vector<uint64_t>{0x00ffffff, 0x3f}));

    Payload aux(swap);
    aux.u64(2).u64(0x1000).u64(0x200).u64(0x3000).u64(0x400);
    f = parse_one(kFeatAuxtrace, aux.bytes, swap);
    ASSERT_EQ(f.auxtrace_index.size(), 2u);
    EXPECT_EQ(f.auxtrace_index[1].file_offset, 0x3000u);
    EXPECT_EQ(f.auxtrace_index[1].size, 0x400u);
    EXPECT_TRUE(f.warnings.empty());
  }
}

// A bpf_prog_info entry as perf stores it: {info_len, data_len, arrays, info, data} with the
// array pointers of the struct turned into offsets into data.
std::vector<uint8_t> bpf_prog_entry(uint32_t id, const std::string& name, uint32_t btf_id,
                                    const std::vector<uint64_t>& ksyms, const std::vector<uint32_t>& lens,
                                    const std::vector<uint64_t>& tags, const std::vector<uint32_t>& type_ids) {
  std::vector<uint8_t> info(232, 0), data;
  auto put32 = [&](size_t off, uint32_t v) { std::memcpy(info.data() + off, &v, 4); };
  auto put64 = [&](size_t off, uint64_t v) { std::memcpy(info.data() + off, &v, 8); };
  put32(4, id);
  std::memcpy(info.data() + 64, name.data(), std::min<size_t>(name.size(), 16));
  put32(104, static_cast<uint32_t>(ksyms.size()));
  put32(108, static_cast<uint32_t>(lens.size()));
  put32(128, btf_id);
  put32(132, 8);
  put32(144, static_cast<uint32_t>(type_ids.size()));
  put32(180, static_cast<uint32_t>(tags.size()));
  ByteWriter d(data);
  put64(112, data.size());
  for (uint64_t k : ksyms) d.u64(k);
  put64(120, data.size());
  for (uint32_t l : lens) d.u32(l);
  d.pad_to(8);
  put64(184, data.size());
  for (uint64_t t : tags) d.u64(t);
  put64(136, data.size());
  for (uint32_t t : type_ids) d.u32(0).u32(t);
  uint64_t arrays = (1u << 3) | (1u << 4) | (1u << 5) | (1u << 8);
  Payload p;
  p.u32(static_cast<uint32_t>(info.size())).u32(static_cast<uint32_t>(data.size())).u64(arrays).raw(info).raw(data);
  return p.bytes;
}

// BTF with int, a FUNC_PROTO and two FUNCs named "tperf_main" and "tperf_sub" (types 3, 4).
std::vector<uint8_t> small_btf() {
  const char strs[] = "\0int\0tperf_main\0tperf_sub";
  std::vector<uint32_t> types = {1, 1u << 24, 4, 0x01000020, 0, 13u << 24, 1, 5, 12u << 24, 2, 16, 12u << 24, 2};
  std::vector<uint8_t> b;
  ByteWriter w(b);
  w.u16(0xeb9f).u8(1).u8(0).u32(24).u32(0).u32(static_cast<uint32_t>(types.size() * 4));
  w.u32(static_cast<uint32_t>(types.size() * 4)).u32(sizeof strs);
  for (uint32_t t : types) w.u32(t);
  w.bytes(std::string_view(strs, sizeof strs));
  return b;
}

TEST(FeaturesParse, BpfProgInfoAndBtf) {
  Payload progs;
  progs.u32(2)
      .raw(bpf_prog_entry(98, "tperf_a", 0, {0xffffffffc00219e0}, {16}, {0xc6cd4d7431a9f459}, {}))
      .raw(bpf_prog_entry(100, "tperf_btf", 14, {0xffffffffc00219d4, 0xffffffffc0021a18}, {21, 19},
                          {0xee603b8fc997d6c3, 0x4ca11ce1a05914b1}, {3, 4}));
  Features f = parse_one(kFeatBpfProgInfo, progs.bytes);
  ASSERT_TRUE(f.warnings.empty()) << f.warnings[0];
  ASSERT_EQ(f.bpf_progs.size(), 2u);
  EXPECT_EQ(f.bpf_progs[0].id, 98u);
  EXPECT_EQ(f.bpf_progs[0].name, "tperf_a");
  EXPECT_EQ(f.bpf_progs[0].jited_ksyms, (std::vector<uint64_t>{0xffffffffc00219e0}));
  EXPECT_EQ(f.bpf_progs[0].jited_func_lens, (std::vector<uint32_t>{16}));
  EXPECT_EQ(f.bpf_progs[0].prog_tags, (std::vector<uint64_t>{0xc6cd4d7431a9f459}));
  EXPECT_EQ(f.bpf_progs[1].btf_id, 14u);
  EXPECT_EQ(f.bpf_progs[1].nr_jited_ksyms, 2u);
  EXPECT_EQ(f.bpf_progs[1].func_type_ids, (std::vector<uint32_t>{3, 4}));

  // An array pointer outside the data is a warning.
  auto bad = bpf_prog_entry(1, "x", 0, {1}, {2}, {3}, {});
  uint64_t far = 4096;
  std::memcpy(bad.data() + 16 + 112, &far, 8);
  Payload bp;
  bp.u32(1).raw(bad);
  EXPECT_EQ(parse_one(kFeatBpfProgInfo, bp.bytes).warnings.size(), 1u);

  auto btf = small_btf();
  Payload b;
  b.u32(1).u32(14).u32(static_cast<uint32_t>(btf.size())).raw(btf);
  f = parse_one(kFeatBpfBtf, b.bytes);
  ASSERT_EQ(f.bpf_btfs.size(), 1u);
  EXPECT_EQ(f.bpf_btfs[0].id, 14u);
  EXPECT_EQ(f.bpf_btfs[0].data, btf);
}

TEST(BtfTypeName, FindsFunctionNames) {
  auto btf = small_btf();
  EXPECT_EQ(btf_type_name(btf, 0), std::optional<std::string>(""));
  EXPECT_EQ(btf_type_name(btf, 1), std::optional<std::string>("int"));
  EXPECT_EQ(btf_type_name(btf, 3), std::optional<std::string>("tperf_main"));
  EXPECT_EQ(btf_type_name(btf, 4), std::optional<std::string>("tperf_sub"));
  EXPECT_EQ(btf_type_name(btf, 5), std::nullopt);
  auto bad_magic = btf;
  bad_magic[0] = 0;
  EXPECT_EQ(btf_type_name(bad_magic, 3), std::nullopt);
  for (size_t n = 0; n < btf.size(); ++n) {
    std::vector<uint8_t> cut(btf.begin(), btf.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_NO_THROW(btf_type_name(cut, 4));
  }
}

TEST(FeaturesParse, UnknownBitsAreKeptRaw) {
  for (unsigned bit : {0u, 32u, 40u, 128u, 130u, 255u}) {
    std::vector<uint8_t> payload = {1, 2, 3};
    Features f = parse_one(bit, payload);
    EXPECT_TRUE(f.has(bit));
    EXPECT_EQ(f.raw.at(bit), payload);
    EXPECT_TRUE(f.warnings.empty());
  }
  Features f;
  f.parse(300, std::vector<uint8_t>{1}, false, 0);  // beyond the 256-bit map
  EXPECT_EQ(f.warnings.size(), 1u);
  EXPECT_FALSE(f.has(300));
}

TEST(FeaturesParse, RandomBytesNeverThrow) {
  std::mt19937 rng(1234);
  for (int round = 0; round < 2000; ++round) {
    std::vector<uint8_t> payload(rng() % 200);
    for (auto& b : payload) b = static_cast<uint8_t>(rng() % 4 == 0 ? rng() : rng() % 3);
    unsigned bit = rng() % 34;
    Features f;
    f.nr_cpus_available = rng() % 5;
    ASSERT_NO_THROW(f.parse(bit, payload, rng() % 2, 0));
  }
}

// --- corpus files: expected values are what `perf report --header-only` (6.1) prints ---

std::string corpus_file(const std::string& rel) {
  std::string path = test::corpus_dir() + "/" + rel;
  return std::filesystem::exists(path) ? path : std::string();
}

TEST(FeaturesCorpus, HybridTopology) {
  std::string path = corpus_file("quipper/testdata/perf.data.hybrid_topology");
  if (path.empty()) GTEST_SKIP() << "corpus not found";
  auto r = Reader::open(path);
  const Features& f = r->features();
  EXPECT_TRUE(f.warnings.empty());
  EXPECT_EQ(f.hostname, "localhost");
  EXPECT_EQ(f.osrelease, "5.15.140-21013-ge5249718105d");
  EXPECT_EQ(f.version, "5.15.68");
  EXPECT_EQ(f.arch, "x86_64");
  EXPECT_EQ(f.nr_cpus_online, 12u);
  EXPECT_EQ(f.nr_cpus_available, 12u);
  EXPECT_EQ(f.cpudesc, "13th Gen Intel(R) Core(TM) i7-1365U");
  EXPECT_EQ(f.cpuid, "GenuineIntel,6,186,3");
  EXPECT_EQ(f.total_mem_kb, 7911756u);
  EXPECT_EQ(f.cmdline, (std::vector<std::string>{"/usr/bin/perf", "record", "-e", "cycles:ppp", "--", "sleep", "1"}));
  ASSERT_EQ(f.event_desc.size(), 3u);
  EXPECT_EQ(f.event_desc[0].name, "cpu_core/cycles:ppp/");
  EXPECT_EQ(f.event_desc[0].ids, (std::vector<uint64_t>{29, 30, 31, 32}));
  EXPECT_EQ(f.event_desc[0].attr.config, 0x400000000u);
  EXPECT_EQ(f.event_desc[0].attr.precise_ip(), 3u);
  EXPECT_EQ(f.event_desc[1].name, "cpu_atom/cycles:ppp/");
  EXPECT_EQ(f.event_desc[1].ids.size(), 8u);
  EXPECT_EQ(f.event_desc[2].name, "dummy:HG");
  EXPECT_EQ(f.event_desc[2].ids.front(), 41u);
  EXPECT_EQ(f.event_desc[2].ids.back(), 52u);
  EXPECT_EQ(f.event_desc[2].attr.type, kTypeSoftware);
  EXPECT_EQ(f.event_desc[2].attr.size, 128u);
  // "time of first sample : 101.132490", "time of last sample : 101.132592"
  EXPECT_EQ(f.first_sample_time / 1000, 101132490u);
  EXPECT_EQ(f.last_sample_time / 1000, 101132592u);
  // "pmu mappings: software = 1, uncore_imc_free_running_1 = 21, ..."
  ASSERT_EQ(f.pmu_mappings.size(), 23u);
  EXPECT_EQ(f.pmu_mappings[0], (std::pair<uint32_t, std::string>{1, "software"}));
  EXPECT_EQ(f.pmu_mappings[22], (std::pair<uint32_t, std::string>{12, "uncore_cbox_1"}));
  // "cpu_core pmu capabilities: branches=32, max_precise=3, pmu_name=alderlake_hybrid"
  ASSERT_EQ(f.pmu_caps.size(), 2u);
  EXPECT_EQ(f.pmu_caps[0].pmu_name, "cpu_core");
  EXPECT_EQ(f.pmu_caps[1].pmu_name, "cpu_atom");
  ASSERT_EQ(f.pmu_caps[0].caps.size(), 3u);
  EXPECT_EQ(f.pmu_caps[0].caps[2], (std::pair<std::string, std::string>{"pmu_name", "alderlake_hybrid"}));
  // "-I": "# cpu_core cpu list : 0-3", "# cpu_atom cpu list : 4-11"
  EXPECT_EQ(f.hybrid_topology,
            (std::vector<std::pair<std::string, std::string>>{{"cpu_core", "0-3"}, {"cpu_atom", "4-11"}}));
  EXPECT_TRUE(f.has(kFeatBuildId));
  EXPECT_FALSE(f.has(kFeatGroupDesc));
}

TEST(FeaturesCorpus, OldFilesAndGroups) {
  std::string arm = corpus_file("quipper/testdata/perf.data.armv7-3.4");
  std::string grp = corpus_file("quipper/testdata/perf.data.group_desc-4.14");
  if (arm.empty() || grp.empty()) GTEST_SKIP() << "corpus not found";
  auto r = Reader::open(arm);
  const Features& f = r->features();
  EXPECT_TRUE(f.warnings.empty());
  EXPECT_EQ(f.arch, "armv7l");
  EXPECT_EQ(f.version, "3.4.2842.g784f12");
  EXPECT_EQ(f.cpudesc, "ARMv7 Processor rev 4 (v7l)");
  EXPECT_EQ(f.total_mem_kb, 2067704u);
  ASSERT_EQ(f.event_desc.size(), 6u);
  EXPECT_EQ(f.event_desc[5].name, "branch-misses");
  EXPECT_EQ(f.event_desc[5].ids, (std::vector<uint64_t>{11, 12}));
  EXPECT_EQ(f.event_desc[5].attr.size, 80u);
  EXPECT_FALSE(f.has(kFeatCpuid));  // listed under "missing features"

  auto g = Reader::open(grp);
  const Features& gf = g->features();
  // "# group: {cache-references,branch-misses}"
  ASSERT_EQ(gf.group_desc.size(), 1u);
  EXPECT_EQ(gf.group_desc[0].name, "{anon_group}");
  EXPECT_EQ(gf.group_desc[0].leader_idx, 0u);
  EXPECT_EQ(gf.group_desc[0].nr_members, 2u);
  EXPECT_EQ(gf.cpuid, "GenuineIntel,6,78,3");
}

TEST(FeaturesCorpus, PipeModeFeatureRecords) {
  std::string path = corpus_file("quipper/testdata/perf.data.piped.header_feautres_group_desc-6.8");
  if (path.empty()) GTEST_SKIP() << "corpus not found";
  auto r = Reader::open(path);
  Record rec;
  while (r->next(rec)) {
  }
  const Features& f = r->features();
  EXPECT_TRUE(f.warnings.empty());
  EXPECT_EQ(f.hostname, "skanev.svl.corp.google.com");
  EXPECT_EQ(f.osrelease, "6.6.15-2rodete2-amd64");
  EXPECT_EQ(f.version, "6.8.0-12-GOOGLE");
  EXPECT_EQ(f.total_mem_kb, 65434092u);
  ASSERT_EQ(f.event_desc.size(), 2u);
  EXPECT_EQ(f.event_desc[0].name, "cycles:u");
  EXPECT_EQ(f.event_desc[1].name, "instructions:u");
  EXPECT_EQ(f.event_desc[1].attr.size, 136u);
  EXPECT_EQ(f.event_desc[1].ids.front(), 88u);
  // "# group: {cycles:u,instructions:u}"
  ASSERT_EQ(f.group_desc.size(), 1u);
  EXPECT_EQ(f.group_desc[0].nr_members, 2u);
  // "# cpu pmu capabilities: branches=32, max_precise=3, pmu_name=skylake"
  ASSERT_EQ(f.cpu_pmu_caps.size(), 3u);
  EXPECT_EQ(f.cpu_pmu_caps[2].second, "skylake");
  ASSERT_EQ(f.pmu_caps.size(), 1u);
  EXPECT_EQ(f.pmu_caps[0].pmu_name, "intel_pt");
}

TEST(FeaturesCorpus, ClockDataAndCompression) {
  std::string path = corpus_file("linux-perf-data/fibo.compressed2.pipe.data");
  if (path.empty()) GTEST_SKIP() << "corpus not found";
  auto r = Reader::open(path);
  Record rec;
  while (r->next(rec)) {
  }
  const Features& f = r->features();
  EXPECT_TRUE(f.warnings.empty());
  // "# clockid frequency: 1000 MHz" (perf prints res * 1000)
  EXPECT_EQ(f.clockid_res_ns, 1u);
  // "# compressed : Zstd, level = 1, ratio = 0"
  EXPECT_EQ(f.compressed.type, 1u);
  EXPECT_EQ(f.compressed.level, 1u);
  // "# clockid: monotonic (1)"
  // "# reference time: ... = 1762878703.344339 (TOD) = 1642.884550397 (monotonic)"
  EXPECT_EQ(f.clock_data.clockid, 1u);
  EXPECT_EQ(f.clock_data.wall_clock_ns / 1000, 1762878703344339u);
  EXPECT_EQ(f.clock_data.clockid_ns, 1642884550397u);
}

}  // namespace
}  // namespace tperf::perfdata
