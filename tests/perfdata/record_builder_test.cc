// RecordBuilder: every record decodes back (decode_sample, the records.h decoders, Features::parse)
// to the values it was built from, in both byte orders; perf 6.1 prints the values we wrote; and
// records perf itself wrote are rebuilt byte for byte from their decoded fields.
#include "perfdata/record_builder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>

#include "perfdata/byte_reader.h"
#include "perfdata/byte_writer.h"
#include "perfdata/reader.h"
#include "perfdata/records.h"
#include "perfdata/sample.h"
#include "perfdata/writer.h"
#include "test_util.h"

namespace tperf::perfdata {
namespace {

using test::run_command;
using test::shell_quote;

struct Header {
  uint32_t type;
  uint16_t misc;
  uint16_t size;
};

Header header_of(const std::vector<uint8_t>& rec, bool swap) {
  ByteReader r(rec, swap, 0);
  Header h;
  h.type = r.u32();
  h.misc = r.u16();
  h.size = r.u16();
  return h;
}

std::span<const uint8_t> body_of(const std::vector<uint8_t>& rec) { return std::span(rec).subspan(8); }

// Every sample_type bit tperf knows (WEIGHT rather than WEIGHT_STRUCT: they share a slot),
// a group read_format, branch stacks with hw_idx and counters, both register sets.
PerfEventAttr rich_attr() {
  PerfEventAttr a;
  a.type = kTypeHardware;
  a.size = kAttrSizeVer8;
  a.sample_type = ((1ULL << 24) - 1);
  a.read_format = kReadTotalTimeEnabled | kReadTotalTimeRunning | kReadId | kReadGroup | kReadLost;
  a.branch_sample_type = kBranchHwIndex | kBranchCounters | 1;
  a.sample_regs_user = 0xff0fff;  // what perf asks for on x86_64: 20 registers
  a.sample_regs_intr = 0x5;
  a.sample_stack_user = 64;
  a.set_flag(kFlagSampleIdAll);
  return a;
}

class BuilderTest : public ::testing::TestWithParam<bool> {
 protected:
  bool swap() const { return GetParam(); }
};

INSTANTIATE_TEST_SUITE_P(ByteOrder, BuilderTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "swapped" : "host"; });

TEST_P(BuilderTest, SampleWithEveryFieldRoundTrips) {
  PerfEventAttr attr = rich_attr();
  RecordBuilder rb(attr, swap());
  std::vector<uint8_t> raw = {1, 2, 3, 4, 5};
  std::vector<uint8_t> stack(64);
  for (size_t i = 0; i < stack.size(); ++i) stack[i] = static_cast<uint8_t>(i * 3);
  std::vector<uint8_t> aux = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 0xff};

  Sample s;
  s.identifier = 77;
  s.ip = 0xffffffff81000010ULL;
  s.pid = 1234;
  s.tid = 1235;
  s.time = 987654321012ULL;
  s.addr = 0x7ffd0000aaaaULL;
  s.id = 77;
  s.stream_id = 78;
  s.cpu = 3;
  s.period = 100003;
  s.read.time_enabled = 1000;
  s.read.time_running = 900;
  s.read.values = {{.value = 11, .id = 77, .lost = 1}, {.value = 22, .id = 79, .lost = 0}};
  s.callchain = {kContextKernel, s.ip, 0xffffffff81000200ULL, kContextUser, 0x401000, 0x402000};
  s.raw = raw;
  s.branch_hw_idx = 5;
  s.branches = {{0x401000, 0x402000, 0x1}, {0x403000, 0x404000, 0x12}};
  s.branch_counters = {3, 4};
  s.regs_user.abi = 2;
  for (int i = 0; i < 20; ++i) s.regs_user.regs.push_back(0x1000 + i);
  s.stack_user = stack;
  s.stack_dyn_size = 48;
  s.weight = 250;
  s.data_src = 0x68100142ULL;
  s.transaction = 0x8;
  s.regs_intr.abi = 2;
  s.regs_intr.regs = {0xaa, 0xbb};
  s.phys_addr = 0x12345000;
  s.cgroup = 42;
  s.data_page_size = 4096;
  s.code_page_size = 2 << 20;
  s.aux = aux;

  auto rec = rb.sample(s, kMiscKernel | kMiscExactIp);
  Header h = header_of(rec, swap());
  EXPECT_EQ(h.type, kRecordSample);
  EXPECT_EQ(h.misc, kMiscKernel | kMiscExactIp);
  EXPECT_EQ(h.size, rec.size());
  EXPECT_EQ(rec.size() % 8, 0u);

  Sample d;
  EXPECT_EQ(decode_sample(body_of(rec), swap(), 8, attr, d), 0u);
  EXPECT_EQ(d.identifier, 77u);
  EXPECT_EQ(d.ip, s.ip);
  EXPECT_EQ(d.pid, 1234u);
  EXPECT_EQ(d.tid, 1235u);
  EXPECT_EQ(d.time, s.time);
  EXPECT_EQ(d.addr, s.addr);
  EXPECT_EQ(d.id, 77u);
  EXPECT_EQ(d.stream_id, 78u);
  EXPECT_EQ(d.cpu, 3u);
  EXPECT_EQ(d.period, 100003u);
  EXPECT_EQ(d.read.time_enabled, 1000u);
  EXPECT_EQ(d.read.time_running, 900u);
  ASSERT_EQ(d.read.values.size(), 2u);
  EXPECT_EQ(d.read.values[1].value, 22u);
  EXPECT_EQ(d.read.values[1].id, 79u);
  EXPECT_EQ(d.read.values[0].lost, 1u);
  EXPECT_EQ(d.callchain, s.callchain);
  // RAW: 5 bytes padded to 12 so that the u32 size and the data fill 16 bytes.
  ASSERT_EQ(d.raw.size(), 12u);
  EXPECT_TRUE(std::equal(raw.begin(), raw.end(), d.raw.begin()));
  EXPECT_EQ(d.raw[5], 0);
  EXPECT_TRUE(d.branch_has_hw_idx);
  EXPECT_EQ(d.branch_hw_idx, 5u);
  ASSERT_EQ(d.branches.size(), 2u);
  EXPECT_EQ(d.branches[1].from, 0x403000u);
  EXPECT_EQ(d.branches[1].to, 0x404000u);
  EXPECT_EQ(d.branches[1].flags, 0x12u);
  EXPECT_EQ(d.branch_counters, s.branch_counters);
  EXPECT_EQ(d.regs_user.abi, 2u);
  EXPECT_EQ(d.regs_user.regs, s.regs_user.regs);
  EXPECT_EQ(d.stack_user_size, 64u);
  EXPECT_TRUE(std::equal(stack.begin(), stack.end(), d.stack_user.begin(), d.stack_user.end()));
  EXPECT_EQ(d.stack_dyn_size, 48u);
  EXPECT_EQ(d.weight, 250u);
  EXPECT_EQ(d.data_src, s.data_src);
  EXPECT_EQ(d.transaction, 8u);
  EXPECT_EQ(d.regs_intr.regs, s.regs_intr.regs);
  EXPECT_EQ(d.phys_addr, s.phys_addr);
  EXPECT_EQ(d.cgroup, 42u);
  EXPECT_EQ(d.data_page_size, 4096u);
  EXPECT_EQ(d.code_page_size, 2u << 20);
  // AUX: 11 bytes padded to 16.
  ASSERT_EQ(d.aux.size(), 16u);
  EXPECT_TRUE(std::equal(aux.begin(), aux.end(), d.aux.begin()));
}

// A Sample decoded into again (as every command does, one Sample for all) holds what a fresh one
// would: Sample::clear() resets the rarer fields only for the bits the last decode had, so a
// sample with every field followed by a plain one (and a sample_id trailer, and a sample cut
// short in its stack copy) must leave nothing behind.
TEST_P(BuilderTest, SampleDecodedIntoAgainHoldsNothingOfTheLastOne) {
  PerfEventAttr rich = rich_attr();
  PerfEventAttr plain;
  plain.sample_type = kSampleIp | kSampleTid | kSampleTime | kSamplePeriod;
  RecordBuilder rich_rb(rich, swap()), plain_rb(plain, swap());
  std::vector<uint8_t> raw = {1, 2, 3};
  std::vector<uint8_t> stack(32, 7);
  std::vector<uint8_t> aux = {4, 5};
  Sample s;
  s.identifier = s.id = 5;
  s.ip = 0x401000;
  s.pid = s.tid = 9;
  s.time = 100;
  s.addr = 0x1234;
  s.stream_id = 6;
  s.cpu = 1;
  s.period = 10;
  s.read.time_enabled = 3;
  s.read.values = {{.value = 1, .id = 5, .lost = 0}};
  s.callchain = {kContextUser, 0x401000, 0x402000};
  s.raw = raw;
  s.branch_hw_idx = 2;
  s.branches = {{0x401000, 0x402000, 0x1}};
  s.branch_counters = {1};
  s.regs_user.abi = 2;
  for (int i = 0; i < 20; ++i) s.regs_user.regs.push_back(0x1000 + i);
  s.stack_user = stack;
  s.stack_dyn_size = 16;
  s.weight = s.data_src = s.transaction = 1;
  s.regs_intr.abi = 2;
  s.regs_intr.regs = {0xaa, 0xbb};
  s.phys_addr = s.cgroup = s.data_page_size = s.code_page_size = 4096;
  s.aux = aux;
  const std::vector<uint8_t> full = rich_rb.sample(s, kMiscUser);
  Sample p;
  p.ip = 0x403000;
  p.pid = p.tid = 10;
  p.time = 200;
  p.period = 20;
  const std::vector<uint8_t> small = plain_rb.sample(p, kMiscUser);

  auto same = [](const Sample& a, const Sample& b) {
    EXPECT_EQ(a.present, b.present);
    EXPECT_EQ(a.identifier, b.identifier);
    EXPECT_EQ(a.ip, b.ip);
    EXPECT_EQ(a.pid, b.pid);
    EXPECT_EQ(a.tid, b.tid);
    EXPECT_EQ(a.time, b.time);
    EXPECT_EQ(a.addr, b.addr);
    EXPECT_EQ(a.id, b.id);
    EXPECT_EQ(a.stream_id, b.stream_id);
    EXPECT_EQ(a.cpu, b.cpu);
    EXPECT_EQ(a.period, b.period);
    EXPECT_EQ(a.read.time_enabled, b.read.time_enabled);
    EXPECT_EQ(a.read.values.size(), b.read.values.size());
    EXPECT_EQ(a.callchain, b.callchain);
    EXPECT_EQ(a.raw.size(), b.raw.size());
    EXPECT_EQ(a.branch_hw_idx, b.branch_hw_idx);
    EXPECT_EQ(a.branch_has_hw_idx, b.branch_has_hw_idx);
    EXPECT_EQ(a.branches.size(), b.branches.size());
    EXPECT_EQ(a.branch_counters, b.branch_counters);
    EXPECT_EQ(a.regs_user.abi, b.regs_user.abi);
    EXPECT_EQ(a.regs_user.mask, b.regs_user.mask);
    EXPECT_EQ(a.regs_user.regs, b.regs_user.regs);
    EXPECT_EQ(a.stack_user.size(), b.stack_user.size());
    EXPECT_EQ(a.stack_user_size, b.stack_user_size);
    EXPECT_EQ(a.stack_dyn_size, b.stack_dyn_size);
    EXPECT_EQ(a.weight, b.weight);
    EXPECT_EQ(a.data_src, b.data_src);
    EXPECT_EQ(a.transaction, b.transaction);
    EXPECT_EQ(a.regs_intr.abi, b.regs_intr.abi);
    EXPECT_EQ(a.regs_intr.regs, b.regs_intr.regs);
    EXPECT_EQ(a.phys_addr, b.phys_addr);
    EXPECT_EQ(a.cgroup, b.cgroup);
    EXPECT_EQ(a.data_page_size, b.data_page_size);
    EXPECT_EQ(a.code_page_size, b.code_page_size);
    EXPECT_EQ(a.aux.size(), b.aux.size());
    EXPECT_EQ(a.deferred_callchain, b.deferred_callchain);
    EXPECT_EQ(a.deferred_cookie, b.deferred_cookie);
  };
  Sample reused;
  decode_sample(body_of(full), swap(), 8, rich, reused);
  ASSERT_FALSE(reused.regs_user.regs.empty());
  ASSERT_FALSE(reused.aux.empty());
  decode_sample(body_of(small), swap(), 8, plain, reused);
  Sample fresh;
  decode_sample(body_of(small), swap(), 8, plain, fresh);
  same(reused, fresh);
  // A sample_id trailer after a rich sample.
  decode_sample(body_of(full), swap(), 8, rich, reused);
  const std::vector<uint8_t> comm = rich_rb.comm({.pid = 9, .tid = 9, .comm = "x"}, {.pid = 9, .tid = 9, .time = 5, .id = 5, .stream_id = 6, .cpu = 1});
  decode_sample_id(body_of(comm), swap(), 8, rich, reused);
  Sample fresh_id;
  decode_sample_id(body_of(comm), swap(), 8, rich, fresh_id);
  same(reused, fresh_id);
  // A rich sample cut short (in its stack copy): whatever it had set is reset by the next decode.
  std::vector<uint8_t> cut = full;
  cut.resize(cut.size() - 40);
  decode_sample(body_of(full), swap(), 8, rich, reused);
  EXPECT_THROW(decode_sample(body_of(cut), swap(), 8, rich, reused), FormatError);
  decode_sample(body_of(small), swap(), 8, plain, reused);
  same(reused, fresh);
}

// What decode_sample() says of `body` decoded for `parts`: its FormatError's message, or "".
std::string decode_error(std::span<const uint8_t> body, bool swap, const PerfEventAttr& attr, Sample& out,
                         SampleParts parts) {
  try {
    decode_sample(body, swap, 8, attr, out, parts);
  } catch (const FormatError& e) {
    return e.what();
  }
  return "";
}

// SampleParts::kWithoutCallchain (a first pass that reads no chain): every other field as a whole
// decode gives it, the chain left empty; and on every cut of the record, the same verdict (the
// same error, at the same offset) as a whole decode.
TEST_P(BuilderTest, SampleDecodedWithoutItsCallchainHasEverythingElse) {
  PerfEventAttr attr = rich_attr();
  RecordBuilder rb(attr, swap());
  std::vector<uint8_t> raw = {1, 2, 3};
  std::vector<uint8_t> stack(32, 0x5a);
  Sample s;
  s.identifier = s.id = 77;
  s.ip = 0xffffffff81000010ULL;
  s.pid = 10;
  s.tid = 11;
  s.time = 5000;
  s.cpu = 1;
  s.period = 3;
  s.callchain = {kContextKernel, s.ip, 0xffffffff81000200ULL, kContextUser, 0x401000, 0x402000, 0x403000};
  s.raw = raw;
  s.branches = {{0x401000, 0x402000, 0x1}};
  s.branch_counters = {7};
  s.regs_user.abi = 2;
  for (int i = 0; i < 20; ++i) s.regs_user.regs.push_back(0x2000 + i);
  s.stack_user = stack;
  s.stack_dyn_size = 16;
  s.weight = 9;
  s.regs_intr.abi = 2;
  s.regs_intr.regs = {0xaa, 0xbb};
  s.data_page_size = 4096;
  auto rec = rb.sample(s, kMiscKernel);
  const std::span<const uint8_t> body = body_of(rec);

  Sample whole, part;
  part.callchain = {1, 2, 3};  // left from an earlier sample: must not show through
  ASSERT_EQ(decode_sample(body, swap(), 8, attr, whole), 0u);
  ASSERT_EQ(decode_sample(body, swap(), 8, attr, part, SampleParts::kWithoutCallchain), 0u);
  EXPECT_EQ(whole.callchain, s.callchain);
  EXPECT_TRUE(part.callchain.empty());
  EXPECT_EQ(part.ip, whole.ip);
  EXPECT_EQ(part.pid, whole.pid);
  EXPECT_EQ(part.tid, whole.tid);
  EXPECT_EQ(part.time, whole.time);
  EXPECT_EQ(part.cpu, whole.cpu);
  EXPECT_EQ(part.period, whole.period);
  EXPECT_EQ(part.read.values.size(), whole.read.values.size());
  EXPECT_TRUE(std::equal(part.raw.begin(), part.raw.end(), whole.raw.begin(), whole.raw.end()));
  ASSERT_EQ(part.branches.size(), 1u);
  EXPECT_EQ(part.branches[0].to, 0x402000u);
  EXPECT_EQ(part.branch_counters, whole.branch_counters);
  EXPECT_EQ(part.regs_user.regs, whole.regs_user.regs);
  EXPECT_EQ(part.stack_user_size, whole.stack_user_size);
  EXPECT_EQ(part.stack_dyn_size, 16u);
  EXPECT_EQ(part.weight, 9u);
  EXPECT_EQ(part.regs_intr.regs, whole.regs_intr.regs);
  EXPECT_EQ(part.data_page_size, 4096u);

  size_t thrown = 0;
  for (size_t cut = 0; cut < body.size(); cut += 8) {
    SCOPED_TRACE(cut);
    const std::string whole_error = decode_error(body.first(cut), swap(), attr, whole, SampleParts::kAll);
    EXPECT_EQ(decode_error(body.first(cut), swap(), attr, part, SampleParts::kWithoutCallchain), whole_error);
    thrown += !whole_error.empty();
  }
  EXPECT_EQ(thrown, body.size() / 8) << "every cut record is short of a field";
}

// SampleParts::kChainInPlace (report compares a chain with those it has seen before it copies
// one): in this machine's byte order, the entries are read where they lie in the record; in the
// other, or misaligned, they are copied as kAll copies them. Every other field, and every cut
// record's error, as a whole decode gives them.
TEST_P(BuilderTest, SampleChainLeftInPlaceWhereItCanBe) {
  PerfEventAttr attr = rich_attr();
  RecordBuilder rb(attr, swap());
  Sample s;
  s.ip = 0xffffffff81000010ULL;
  s.pid = 10;
  s.tid = 11;
  s.time = 5000;
  s.cpu = 1;
  s.period = 3;
  s.callchain = {kContextKernel, s.ip, 0xffffffff81000200ULL, kContextUser, 0x401000, 0x402000};
  s.regs_user.abi = 2;
  for (int i = 0; i < 20; ++i) s.regs_user.regs.push_back(0x2000 + i);
  std::vector<uint8_t> stack(32, 0x5a);
  s.stack_user = stack;
  s.stack_dyn_size = 16;
  const std::vector<uint8_t> rec = rb.sample(s);
  const std::span<const uint8_t> body = body_of(rec);

  Sample whole, in_place;
  in_place.callchain = {1, 2, 3};  // left from an earlier sample: must not show through
  ASSERT_EQ(decode_sample(body, swap(), 8, attr, whole), 0u);
  ASSERT_EQ(decode_sample(body, swap(), 8, attr, in_place, SampleParts::kChainInPlace), 0u);
  EXPECT_TRUE(std::ranges::equal(in_place.chain(), s.callchain));
  EXPECT_TRUE(std::ranges::equal(whole.chain(), s.callchain));
  EXPECT_EQ(whole.chain_in_place.data(), nullptr);
  if (swap()) {
    EXPECT_EQ(in_place.chain_in_place.data(), nullptr) << "a foreign-order chain is read word by word";
    EXPECT_EQ(in_place.callchain, s.callchain);
  } else {
    EXPECT_TRUE(in_place.callchain.empty());
    const auto* at = reinterpret_cast<const uint8_t*>(in_place.chain_in_place.data());
    EXPECT_GE(at, body.data());
    EXPECT_LE(at + in_place.chain_in_place.size_bytes(), body.data() + body.size());
  }
  EXPECT_EQ(in_place.ip, whole.ip);
  EXPECT_EQ(in_place.tid, whole.tid);
  EXPECT_EQ(in_place.time, whole.time);
  EXPECT_EQ(in_place.period, whole.period);
  EXPECT_EQ(in_place.regs_user.regs, whole.regs_user.regs);
  EXPECT_EQ(in_place.stack_dyn_size, 16u);

  // The next decode (of any kind) drops the view: it pointed into the record before.
  decode_sample(body, swap(), 8, attr, in_place);
  EXPECT_EQ(in_place.chain_in_place.data(), nullptr);
  EXPECT_EQ(in_place.callchain, s.callchain);

  // Misaligned in memory: copied.
  std::vector<uint8_t> shifted(body.size() + 4);
  std::copy(body.begin(), body.end(), shifted.begin() + 4);
  Sample moved;
  ASSERT_EQ(decode_sample(std::span<const uint8_t>(shifted).subspan(4), swap(), 8, attr, moved,
                          SampleParts::kChainInPlace),
            0u);
  EXPECT_EQ(moved.chain_in_place.data(), nullptr);
  EXPECT_EQ(moved.callchain, s.callchain);

  for (size_t cut = 0; cut < body.size(); cut += 8) {
    SCOPED_TRACE(cut);
    EXPECT_EQ(decode_error(body.first(cut), swap(), attr, in_place, SampleParts::kChainInPlace),
              decode_error(body.first(cut), swap(), attr, whole, SampleParts::kAll));
  }
}

TEST_P(BuilderTest, SampleOptionalParts) {
  PerfEventAttr attr;
  attr.sample_type = kSampleIp | kSampleRead | kSampleBranchStack | kSampleRegsUser | kSampleStackUser;
  attr.read_format = kReadId;  // not a group: one value
  attr.sample_regs_user = 0x3;
  RecordBuilder rb(attr, swap());
  Sample s;
  s.ip = 1;
  s.read.values = {{.value = 5, .id = 9}};
  s.branches = {{1, 2, 3}};
  // abi 0: no registers follow; stack size 0: no dyn_size follows.
  auto rec = rb.sample(s);
  // header, ip, read {value, id}, branch {nr, 1 entry}, abi, stack size
  EXPECT_EQ(rec.size(), 8u + 8 + 16 + 8 + 24 + 8 + 8);
  Sample d;
  EXPECT_EQ(decode_sample(body_of(rec), swap(), 8, attr, d), 0u);
  ASSERT_EQ(d.read.values.size(), 1u);
  EXPECT_EQ(d.read.values[0].value, 5u);
  EXPECT_EQ(d.read.values[0].id, 9u);
  EXPECT_FALSE(d.branch_has_hw_idx);
  EXPECT_EQ(d.branches.size(), 1u);
  EXPECT_TRUE(d.branch_counters.empty());
  EXPECT_EQ(d.regs_user.abi, 0u);
  EXPECT_TRUE(d.regs_user.regs.empty());
  EXPECT_EQ(d.stack_user_size, 0u);
  EXPECT_EQ(d.stack_dyn_size, 0u);
}

TEST_P(BuilderTest, SampleRejectsWhatCannotBeEncoded) {
  PerfEventAttr attr;
  attr.sample_type = kSampleRegsUser;
  attr.sample_regs_user = 0x7;
  RecordBuilder rb(attr, swap());
  Sample s;
  s.regs_user.abi = 2;
  s.regs_user.regs = {1, 2};  // the mask has 3 bits
  EXPECT_THROW(rb.sample(s), std::invalid_argument);

  PerfEventAttr big;
  big.sample_type = kSampleCallchain;
  Sample c;
  c.callchain.assign(9000, 1);  // 72 KB
  EXPECT_THROW(RecordBuilder(big, swap()).sample(c), std::invalid_argument);
}

// The sample_id trailer: present on kernel records iff sample_id_all, fields in kernel order.
TEST_P(BuilderTest, SampleIdTrailer) {
  PerfEventAttr attr;
  attr.sample_type = kSampleTid | kSampleTime | kSampleId | kSampleStreamId | kSampleCpu | kSampleIdentifier |
                     kSampleIp | kSamplePeriod;
  attr.set_flag(kFlagSampleIdAll);
  RecordBuilder rb(attr, swap());
  SampleId sid{.pid = 1, .tid = 2, .time = 3, .id = 4, .stream_id = 5, .cpu = 6};
  auto rec = rb.itrace_start(10, 11, sid);
  EXPECT_EQ(rec.size(), 8u + 8 + 48);
  Sample d;
  decode_sample_id(body_of(rec), swap(), 8, attr, d);
  EXPECT_EQ(d.pid, 1u);
  EXPECT_EQ(d.tid, 2u);
  EXPECT_EQ(d.time, 3u);
  EXPECT_EQ(d.id, 4u);
  EXPECT_EQ(d.stream_id, 5u);
  EXPECT_EQ(d.cpu, 6u);
  EXPECT_EQ(d.identifier, 4u);
  EXPECT_EQ(rb.sample_id(sid).size(), 48u);

  attr.set_flag(kFlagSampleIdAll, false);
  EXPECT_EQ(RecordBuilder(attr, swap()).itrace_start(10, 11, sid).size(), 16u);
  // Tool records never carry one, even with sample_id_all.
  EXPECT_EQ(rb.finished_round().size(), 8u);
  EXPECT_EQ(rb.id_index(std::vector<IdIndexEntry>{{.id = 1}}).size(), 8u + 8 + 32);
}

TEST_P(BuilderTest, KernelRecordsRoundTrip) {
  PerfEventAttr attr;
  attr.sample_type = kSampleTid | kSampleTime | kSampleCpu | kSampleIdentifier;
  attr.read_format = kReadTotalTimeEnabled | kReadId;
  attr.set_flag(kFlagSampleIdAll);
  const unsigned trailer = sample_id_trailer_size(attr);
  ASSERT_EQ(trailer, 32u);
  const bool sw = swap();
  RecordBuilder rb(attr, sw);
  SampleId sid{.pid = 7, .tid = 8, .time = 999, .id = 55, .cpu = 2};

  auto check = [&](const std::vector<uint8_t>& rec, uint32_t type) {
    Header h = header_of(rec, sw);
    EXPECT_EQ(h.type, type);
    EXPECT_EQ(h.size, rec.size());
    EXPECT_EQ(rec.size() % 8, 0u) << "type " << type;
    Sample t;
    decode_sample_id(body_of(rec), sw, 8, attr, t);
    EXPECT_EQ(t.pid, 7u);
    EXPECT_EQ(t.tid, 8u);
    EXPECT_EQ(t.time, 999u);
    EXPECT_EQ(t.cpu, 2u);
    EXPECT_EQ(t.identifier, 55u);
    return h.misc;
  };

  {
    auto rec = rb.mmap({.misc = kMiscKernel,
                        .pid = -1,
                        .tid = 0,
                        .addr = 0xffffffff81000000ULL,
                        .len = 0x1000000,
                        .pgoff = 0xffffffff81000000ULL,
                        .filename = "[kernel.kallsyms]_text"},
                       sid);
    uint16_t misc = check(rec, kRecordMmap);
    auto e = decode_mmap(body_of(rec), misc, trailer, sw, 8);
    EXPECT_EQ(e.misc, kMiscKernel);
    EXPECT_EQ(e.pid, -1);
    EXPECT_EQ(e.addr, 0xffffffff81000000ULL);
    EXPECT_EQ(e.len, 0x1000000u);
    EXPECT_EQ(e.pgoff, 0xffffffff81000000ULL);
    EXPECT_EQ(e.filename, "[kernel.kallsyms]_text");
  }
  {
    auto rec = rb.mmap2({.pid = 5,
                         .tid = 6,
                         .addr = 0x400000,
                         .len = 0x3000,
                         .pgoff = 0x1000,
                         .maj = 259,
                         .min = 3,
                         .ino = 0x123456789ULL,
                         .ino_generation = 17,
                         .prot = 7,
                         .flags = 1,
                         .filename = "/usr/lib/x86_64-linux-gnu/libc.so.6"},
                        sid);
    uint16_t misc = check(rec, kRecordMmap2);
    EXPECT_EQ(misc, kMiscUser);
    auto e = decode_mmap2(body_of(rec), misc, trailer, sw, 8);
    EXPECT_EQ(e.pid, 5);
    EXPECT_EQ(e.tid, 6);
    EXPECT_EQ(e.pgoff, 0x1000u);
    EXPECT_EQ(e.maj, 259u);
    EXPECT_EQ(e.min, 3u);
    EXPECT_EQ(e.ino, 0x123456789ULL);
    EXPECT_EQ(e.ino_generation, 17u);
    EXPECT_EQ(e.prot, 7u);
    EXPECT_EQ(e.flags, 1u);
    EXPECT_EQ(e.filename, "/usr/lib/x86_64-linux-gnu/libc.so.6");
  }
  {
    std::vector<uint8_t> bid = {0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    auto rec = rb.mmap2(
        {.pid = 5, .tid = 5, .addr = 0x7f0000000000ULL, .len = 0x1000, .build_id = bid, .filename = "/lib/ld.so"}, sid);
    uint16_t misc = check(rec, kRecordMmap2);
    EXPECT_EQ(misc, kMiscUser | kMiscMmapBuildId);
    auto e = decode_mmap2(body_of(rec), misc, trailer, sw, 8);
    EXPECT_EQ(e.build_id, bid);
    EXPECT_EQ(e.filename, "/lib/ld.so");
  }
  {
    auto rec = rb.comm({.pid = 9, .tid = 10, .comm = "worker-thread", .exec = true}, sid);
    uint16_t misc = check(rec, kRecordComm);
    EXPECT_EQ(misc, kMiscCommExec);
    auto e = decode_comm(body_of(rec), misc, trailer, sw, 8);
    EXPECT_EQ(e.pid, 9);
    EXPECT_EQ(e.tid, 10);
    EXPECT_EQ(e.comm, "worker-thread");
    EXPECT_TRUE(e.exec);
    // An 8-character name needs a whole extra 8 bytes for its NUL.
    EXPECT_EQ(rb.comm({.comm = "12345678"}).size(), 8u + 8 + 16 + trailer);
    EXPECT_EQ(header_of(rb.comm({.comm = "x"}), sw).misc, 0);
  }
  for (uint32_t type : {kRecordFork, kRecordExit}) {
    TaskEvent t{.pid = 20, .ppid = 1, .tid = 21, .ptid = 2, .time = 12345, .misc = kMiscForkExec};
    auto rec = type == kRecordFork ? rb.fork(t, sid) : rb.exit(t, sid);
    uint16_t misc = check(rec, type);
    auto e = decode_task(body_of(rec), misc, sw, 8);
    EXPECT_EQ(e.pid, 20);
    EXPECT_EQ(e.ppid, 1);
    EXPECT_EQ(e.tid, 21);
    EXPECT_EQ(e.ptid, 2);
    EXPECT_EQ(e.time, 12345u);
    EXPECT_EQ(e.misc, kMiscForkExec);
  }
  {
    auto rec = rb.lost({.id = 55, .lost = 1000}, sid);
    check(rec, kRecordLost);
    auto e = decode_lost(body_of(rec), sw, 8);
    EXPECT_EQ(e.id, 55u);
    EXPECT_EQ(e.lost, 1000u);
  }
  for (uint32_t type : {kRecordThrottle, kRecordUnthrottle}) {
    ThrottleEvent t{.time = 5, .id = 55, .stream_id = 56};
    auto rec = type == kRecordThrottle ? rb.throttle(t, sid) : rb.unthrottle(t, sid);
    check(rec, type);
    auto e = decode_throttle(body_of(rec), sw, 8);
    EXPECT_EQ(e.time, 5u);
    EXPECT_EQ(e.id, 55u);
    EXPECT_EQ(e.stream_id, 56u);
  }
  {
    ReadEvent re{.pid = 3, .tid = 4};
    re.values.time_enabled = 777;
    re.values.values = {{.value = 42, .id = 55}};
    auto rec = rb.read(re, sid);
    check(rec, kRecordRead);
    ByteReader r(body_of(rec), sw, 8);
    EXPECT_EQ(r.u32(), 3u);
    EXPECT_EQ(r.u32(), 4u);
    EXPECT_EQ(r.u64(), 42u);   // value
    EXPECT_EQ(r.u64(), 777u);  // time_enabled
    EXPECT_EQ(r.u64(), 55u);   // id
    EXPECT_EQ(r.remaining(), trailer);
  }
  {
    auto rec = rb.aux({.aux_offset = 0x1000, .aux_size = 0x2000, .flags = 0x101}, sid);
    check(rec, kRecordAux);
    auto e = decode_aux(body_of(rec), sw, 8);
    EXPECT_EQ(e.aux_offset, 0x1000u);
    EXPECT_EQ(e.aux_size, 0x2000u);
    EXPECT_EQ(e.flags, 0x101u);
  }
  {
    auto rec = rb.itrace_start(30, 31, sid);
    check(rec, kRecordItraceStart);
    ByteReader r(body_of(rec), sw, 8);
    EXPECT_EQ(r.s32(), 30);
    EXPECT_EQ(r.s32(), 31);
  }
  {
    auto rec = rb.lost_samples(66, sid, kMiscLostSamplesBpf);
    EXPECT_EQ(check(rec, kRecordLostSamples), kMiscLostSamplesBpf);
    EXPECT_EQ(load<uint64_t>(rec.data() + 8, sw), 66u);
  }
  {
    auto rec = rb.switch_event(true, true, sid);
    uint16_t misc = check(rec, kRecordSwitch);
    EXPECT_EQ(rec.size(), 8u + trailer);
    EXPECT_EQ(misc, kMiscSwitchOut | kMiscSwitchOutPreempt);
    EXPECT_EQ(header_of(rb.switch_event(false), sw).misc, 0);
  }
  {
    auto rec = rb.switch_cpu_wide({.out = true, .next_prev_pid = 40, .next_prev_tid = 41}, sid);
    uint16_t misc = check(rec, kRecordSwitchCpuWide);
    EXPECT_EQ(misc, kMiscSwitchOut);
    auto e = decode_switch(body_of(rec), misc, true, sw, 8);
    EXPECT_TRUE(e.out);
    EXPECT_FALSE(e.preempt);
    EXPECT_EQ(e.next_prev_pid, 40);
    EXPECT_EQ(e.next_prev_tid, 41);
  }
  {
    NamespacesEvent ns{.pid = 50, .tid = 51};
    for (uint64_t i = 0; i < 7; ++i) ns.namespaces.push_back({.dev = 4 + i, .ino = 0xf0000000 + i});
    auto rec = rb.namespaces(ns, sid);
    check(rec, kRecordNamespaces);
    auto e = decode_namespaces(body_of(rec), sw, 8);
    EXPECT_EQ(e.pid, 50);
    EXPECT_EQ(e.tid, 51);
    ASSERT_EQ(e.namespaces.size(), 7u);
    EXPECT_EQ(e.namespaces[6].dev, 10u);
    EXPECT_EQ(e.namespaces[6].ino, 0xf0000006u);
  }
  {
    auto rec = rb.ksymbol({.addr = 0xffffffffc0001000ULL,
                           .len = 0x80,
                           .ksym_type = 1,
                           .flags = 1,
                           .name = "bpf_prog_6deef7357e7b4530_sd_fw_ingress"},
                          sid);
    uint16_t misc = check(rec, kRecordKsymbol);
    auto e = decode_ksymbol(body_of(rec), misc, trailer, sw, 8);
    EXPECT_EQ(e.addr, 0xffffffffc0001000ULL);
    EXPECT_EQ(e.len, 0x80u);
    EXPECT_EQ(e.ksym_type, 1);
    EXPECT_EQ(e.flags, 1);
    EXPECT_EQ(e.name, "bpf_prog_6deef7357e7b4530_sd_fw_ingress");
  }
  {
    auto rec = rb.bpf_event({.type = 1, .flags = 0, .id = 77, .tag = {1, 2, 3, 4, 5, 6, 7, 8}}, sid);
    uint16_t misc = check(rec, kRecordBpfEvent);
    auto e = decode_bpf_event(body_of(rec), misc, sw, 8);
    EXPECT_EQ(e.type, 1);
    EXPECT_EQ(e.id, 77u);
    EXPECT_EQ(e.tag, (std::array<uint8_t, 8>{1, 2, 3, 4, 5, 6, 7, 8}));
  }
  {
    auto rec = rb.cgroup({.id = 0x1234, .path = "/system.slice/ssh.service"}, sid);
    check(rec, kRecordCgroup);
    auto e = decode_cgroup(body_of(rec), trailer, sw, 8);
    EXPECT_EQ(e.id, 0x1234u);
    EXPECT_EQ(e.path, "/system.slice/ssh.service");
  }
  {
    TextPokeEvent tp{
        .addr = 0xffffffff81234567ULL, .old_bytes = {0x0f, 0x1f, 0x44, 0x00, 0x00}, .new_bytes = {0xe8, 1, 2, 3, 4}};
    auto rec = rb.text_poke(tp, sid);
    uint16_t misc = check(rec, kRecordTextPoke);
    // u64 addr, 2 x u16, 10 bytes, padded: 8 + 16 bytes of body before the trailer.
    EXPECT_EQ(rec.size(), 8u + 24 + trailer);
    auto e = decode_text_poke(std::span(rec).subspan(8, rec.size() - 8 - trailer), misc, sw, 8);
    EXPECT_EQ(e.addr, tp.addr);
    EXPECT_EQ(e.old_bytes, tp.old_bytes);
    EXPECT_EQ(e.new_bytes, tp.new_bytes);
  }
  {
    auto rec = rb.aux_output_hw_id(0xabc, sid);
    check(rec, kRecordAuxOutputHwId);
    EXPECT_EQ(load<uint64_t>(rec.data() + 8, sw), 0xabcu);
  }
  {
    auto rec = rb.callchain_deferred({.cookie = 0xb00000006ULL, .ips = {0x401000, 0x402000, 0x403000}}, sid);
    uint16_t misc = check(rec, kRecordCallchainDeferred);
    EXPECT_EQ(misc, kMiscUser);
    auto e = decode_callchain_deferred(std::span(rec).subspan(8, rec.size() - 8 - trailer), misc, sw, 8);
    EXPECT_EQ(e.cookie, 0xb00000006ULL);
    EXPECT_EQ(e.ips, (std::vector<uint64_t>{0x401000, 0x402000, 0x403000}));
  }
}

TEST_P(BuilderTest, ToolRecordsRoundTrip) {
  const bool sw = swap();
  RecordBuilder rb(PerfEventAttr{}, sw);
  EXPECT_EQ(header_of(rb.finished_round(), sw).type, kRecordFinishedRound);
  EXPECT_EQ(header_of(rb.finished_init(), sw).type, kRecordFinishedInit);
  {
    std::vector<IdIndexEntry> ids = {{.id = 12, .idx = 0, .cpu = 0, .tid = 500},
                                     {.id = 13, .idx = 1, .cpu = 1, .tid = -1}};
    auto rec = rb.id_index(ids);
    EXPECT_EQ(header_of(rec, sw).type, kRecordIdIndex);
    auto got = decode_id_index(body_of(rec), sw, 8);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[1].id, 13u);
    EXPECT_EQ(got[1].idx, 1u);
    EXPECT_EQ(got[1].cpu, 1);
    EXPECT_EQ(got[1].tid, -1);
    EXPECT_EQ(got[0].tid, 500);
  }
  {
    std::vector<ThreadMapEntry> threads = {{.pid = 100, .comm = "bash"},
                                           {.pid = 101, .comm = "a-very-long-thread-name"}};
    auto rec = rb.thread_map(threads);
    EXPECT_EQ(rec.size(), 8u + 8 + 2 * 24);
    auto got = decode_thread_map(body_of(rec), sw, 8);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].pid, 100);
    EXPECT_EQ(got[0].comm, "bash");
    EXPECT_EQ(got[1].comm, "a-very-long-thr");  // comm[16] keeps 15 characters and a NUL
  }
  {
    std::vector<uint16_t> cpus = {0, 2, 5};
    auto rec = rb.cpu_map(cpus);
    EXPECT_EQ(rec.size() % 8, 0u);
    EXPECT_EQ(decode_cpu_map(body_of(rec), sw, 8), (std::vector<uint32_t>{0, 2, 5}));
    auto range = rb.cpu_map_range(0, 3);
    EXPECT_EQ(range.size(), 16u);  // as perf 6.1 writes "0-3"
    EXPECT_EQ(decode_cpu_map(body_of(range), sw, 8), (std::vector<uint32_t>{0, 1, 2, 3}));
  }
  {
    TimeConv tc{.time_shift = 31,
                .time_mult = 1234567,
                .time_zero = 999,
                .time_cycles = 5,
                .time_mask = 0xffff,
                .cap_user_time_zero = true,
                .cap_user_time_short = false};
    auto rec = rb.time_conv(tc);
    EXPECT_EQ(rec.size(), 56u);
    auto got = decode_time_conv(body_of(rec), sw, 8);
    EXPECT_EQ(got.time_shift, 31u);
    EXPECT_EQ(got.time_mult, 1234567u);
    EXPECT_EQ(got.time_zero, 999u);
    EXPECT_EQ(got.time_cycles, 5u);
    EXPECT_EQ(got.time_mask, 0xffffu);
    EXPECT_TRUE(got.cap_user_time_zero);
    EXPECT_FALSE(got.cap_user_time_short);
    tc.extended = false;
    EXPECT_EQ(rb.time_conv(tc).size(), 32u);
  }
  {
    PerfEventAttr a = rich_attr();
    a.set_flag(kFlagMmap);
    a.set_flag(kFlagDisabled);
    std::vector<uint64_t> ids = {3, 4};
    auto rec = rb.header_attr(a, ids);
    EXPECT_EQ(rec.size(), 8u + a.size + 16);
    ByteReader r(body_of(rec), sw, 8);
    PerfEventAttr got = decode_attr(r, a.size);
    std::vector<uint8_t> x, y;
    encode_attr(got, x);
    encode_attr(a, y);
    EXPECT_EQ(x, y);
    EXPECT_EQ(r.u64(), 3u);
    EXPECT_EQ(r.u64(), 4u);
  }
  {
    std::vector<uint8_t> payload = feature_string("host", sw);
    auto rec = rb.header_feature(kFeatHostname, payload);
    EXPECT_EQ(rec.size(), 16u + 68);  // not padded, like perf's
    EXPECT_EQ(load<uint64_t>(rec.data() + 8, sw), kFeatHostname);
    Features f;
    f.parse(kFeatHostname, std::span(rec).subspan(16), sw, 16);
    EXPECT_EQ(f.hostname, "host");
  }
  {
    auto rec = rb.event_update_name(42, "cycles:u");
    ByteReader r(body_of(rec), sw, 8);
    EXPECT_EQ(r.u64(), kEventUpdateName);
    EXPECT_EQ(r.u64(), 42u);
    EXPECT_EQ(r.cstring(), "cycles:u");
    EXPECT_EQ(rec.size() % 8, 0u);
  }
  {
    BuildIdEntry e{.misc = kMiscUser, .pid = -1, .build_id = {1, 2, 3}, .filename = "/bin/true"};
    auto rec = rb.header_build_id(e);
    Header h = header_of(rec, sw);
    EXPECT_EQ(h.type, kRecordHeaderBuildId);
    EXPECT_EQ(h.misc, kMiscUser | kMiscBuildIdSize);
    EXPECT_EQ(h.size, 36u + 64);  // filename padded to 64, as perf writes it
  }
  {
    std::vector<uint8_t> z = {0x28, 0xb5, 0x2f, 0xfd, 1, 2, 3};
    auto rec = rb.compressed(z);
    EXPECT_EQ(rec.size(), 15u);  // not padded
    EXPECT_EQ(header_of(rec, sw).type, kRecordCompressed);
    auto rec2 = rb.compressed2(z);
    EXPECT_EQ(rec2.size(), 24u);
    EXPECT_EQ(header_of(rec2, sw).type, kRecordCompressed2);
    EXPECT_EQ(load<uint64_t>(rec2.data() + 8, sw), 7u);
  }
}

TEST_P(BuilderTest, FeaturePayloadsParse) {
  const bool sw = swap();
  Features f;
  auto host = feature_string("vm", sw);
  EXPECT_EQ(host.size(), 68u);  // "vm" padded to 64, plus the u32 length, as perf writes it
  f.parse(kFeatHostname, host, sw, 0);
  EXPECT_EQ(f.hostname, "vm");
  std::vector<std::string> argv = {"perf", "record", "-a"};
  f.parse(kFeatCmdline, feature_string_list(argv, sw), sw, 0);
  EXPECT_EQ(f.cmdline, argv);
  f.parse(kFeatNrcpus, feature_nrcpus(8, 6, sw), sw, 0);
  EXPECT_EQ(f.nr_cpus_available, 8u);
  EXPECT_EQ(f.nr_cpus_online, 6u);
  f.parse(kFeatTotalMem, feature_u64(24682416, sw), sw, 0);
  EXPECT_EQ(f.total_mem_kb, 24682416u);
  f.parse(kFeatSampleTime, feature_sample_time(10, 20, sw), sw, 0);
  EXPECT_EQ(f.first_sample_time, 10u);
  EXPECT_EQ(f.last_sample_time, 20u);
  f.parse(kFeatClockData, feature_clock_data({.version = 1, .clockid = 4, .wall_clock_ns = 5, .clockid_ns = 6}, sw), sw,
          0);
  EXPECT_EQ(f.clock_data.clockid, 4u);
  EXPECT_EQ(f.clock_data.wall_clock_ns, 5u);
  EXPECT_EQ(f.clock_data.clockid_ns, 6u);
  f.parse(kFeatCompressed,
          feature_compressed({.version = 0, .type = 1, .level = 3, .ratio = 4, .mmap_len = 528384}, sw), sw, 0);
  EXPECT_EQ(f.compressed.level, 3u);
  EXPECT_EQ(f.compressed.ratio, 4u);
  EXPECT_EQ(f.compressed.mmap_len, 528384u);

  std::vector<EventDescEntry> events(2);
  events[0].attr = rich_attr();
  events[0].attr.set_flag(kFlagFreq);
  events[0].attr.set_flag(kFlagExcludeKernel);
  events[0].name = "cycles:u";
  events[0].ids = {1, 2, 3};
  events[1].attr.size = kAttrSizeVer8;
  events[1].attr.type = kTypeSoftware;
  events[1].attr.config = kSwDummy;
  events[1].name = "dummy:u";
  f.parse(kFeatEventDesc, feature_event_desc(events, sw), sw, 0);
  EXPECT_EQ(f.warnings, std::vector<std::string>{});
  ASSERT_EQ(f.event_desc.size(), 2u);
  EXPECT_EQ(f.event_desc[0].name, "cycles:u");
  EXPECT_EQ(f.event_desc[0].ids, (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(f.event_desc[0].attr.flags, events[0].attr.flags);
  EXPECT_EQ(f.event_desc[0].attr.sample_regs_user, 0xff0fffu);
  EXPECT_EQ(f.event_desc[1].attr.config, kSwDummy);
  EXPECT_TRUE(f.event_desc[1].ids.empty());

  std::vector<BuildIdEntry> ids = {
      {.misc = kMiscKernel, .pid = -1, .build_id = std::vector<uint8_t>(20, 7), .filename = "[kernel.kallsyms]"},
      {.misc = kMiscUser, .pid = 33, .build_id = {1, 2}, .filename = "/bin/ls"}};
  auto payload = feature_build_ids(ids, sw);
  EXPECT_EQ(payload.size(), 2 * 100u);  // 36 + filename padded to 64: not 8-aligned records
  f.parse(kFeatBuildId, payload, sw, 0);
  ASSERT_EQ(f.build_ids.size(), 2u);
  EXPECT_EQ(f.build_ids[0].build_id, ids[0].build_id);
  EXPECT_EQ(f.build_ids[0].filename, "[kernel.kallsyms]");
  EXPECT_EQ(f.build_ids[1].pid, 33);
  EXPECT_EQ(f.build_ids[1].build_id, ids[1].build_id);
  EXPECT_EQ(f.warnings, std::vector<std::string>{});
}

TEST(ByteWriterTest, WritesBothByteOrders) {
  std::vector<uint8_t> le, be;
  ByteWriter(le).u16(0x0102).u32(0x03040506).u64(0x0708090a0b0c0d0eULL);
  ByteWriter(be, true).u16(0x0102).u32(0x03040506).u64(0x0708090a0b0c0d0eULL);
  EXPECT_EQ(le, (std::vector<uint8_t>{2, 1, 6, 5, 4, 3, 0xe, 0xd, 0xc, 0xb, 0xa, 9, 8, 7}));
  EXPECT_EQ(be, (std::vector<uint8_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 0xa, 0xb, 0xc, 0xd, 0xe}));
  std::vector<uint8_t> s;
  ByteWriter w(s);
  w.padded_string("abc").padded_string("12345678").fixed_string("toolongname", 4).padded_string("", 64);
  EXPECT_EQ(s.size(), 8u + 16 + 4 + 64);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(s.data() + 24), 4), std::string("too\0", 4));
  w.patch_u32(0, 0x64636261);
  EXPECT_EQ(s[0], 'a');
  EXPECT_THROW(w.patch_u64(s.size() - 4, 1), std::out_of_range);
}

// --- perf 6.1 as the oracle ---

class TempFile {
 public:
  TempFile() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "tperf-builder-XXXXXX").string();
    int fd = mkstemp(tmpl.data());
    if (fd < 0) throw std::runtime_error("mkstemp failed");
    close(fd);
    path_ = tmpl;
  }
  ~TempFile() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Every kernel record type perf 6.1 prints, as it prints them.
TEST(BuilderPerfTest, PerfDumpShowsTheValuesWritten) {
  TPERF_REQUIRE_PROGRAM("perf");
  TempFile tmp;
  Writer w;
  w.open(tmp.path());
  PerfEventAttr a;
  a.type = kTypeSoftware;
  a.size = kAttrSizeVer7;
  a.config = kSwDummy;
  a.sample_type = kSampleIp | kSampleTid | kSampleTime | kSampleCpu | kSamplePeriod | kSampleIdentifier;
  for (auto bit : {kFlagSampleIdAll, kFlagExcludeKernel, kFlagExcludeHv, kFlagMmap, kFlagComm, kFlagTask, kFlagMmap2,
                   kFlagContextSwitch, kFlagNamespaces, kFlagKsymbol, kFlagBpfEvent, kFlagCgroup, kFlagTextPoke}) {
    a.set_flag(bit);
  }
  w.add_attr(a, {42}, "dummy:u");
  RecordBuilder rb = w.builder(0);
  uint64_t t = 1000;
  auto sid = [&](uint32_t pid, uint32_t tid) {
    return SampleId{.pid = pid, .tid = tid, .time = t++, .id = 42, .cpu = 1};
  };
  w.write_record(rb.mmap({.misc = kMiscUser,
                          .pid = 7,
                          .tid = 7,
                          .addr = 0x10000,
                          .len = 0x2000,
                          .pgoff = 0x3000,
                          .filename = "/opt/old-style"},
                         sid(7, 7)));
  w.write_record(rb.mmap2({.pid = 7,
                           .tid = 8,
                           .addr = 0x400000,
                           .len = 0x1000,
                           .pgoff = 0,
                           .maj = 8,
                           .min = 2,
                           .ino = 99,
                           .ino_generation = 3,
                           .prot = 5,
                           .flags = 2,
                           .filename = "/usr/bin/app"},
                          sid(7, 8)));
  w.write_record(
      rb.mmap2({.pid = 7,
                .tid = 7,
                .addr = 0x500000,
                .len = 0x1000,
                .build_id = {0xde, 0xad, 0xbe, 0xef, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0xa, 0xb, 0xc, 0xd, 0xe, 0xf},
                .filename = "/usr/lib/libbid.so"},
               sid(7, 7)));
  w.write_record(rb.comm({.pid = 7, .tid = 8, .comm = "renamed"}, sid(7, 8)));
  w.write_record(rb.comm({.pid = 7, .tid = 7, .comm = "app", .exec = true}, sid(7, 7)));
  w.write_record(rb.fork({.pid = 9, .ppid = 7, .tid = 9, .ptid = 7, .time = t}, sid(9, 9)));
  w.write_record(rb.exit({.pid = 9, .ppid = 7, .tid = 9, .ptid = 7, .time = t}, sid(9, 9)));
  w.write_record(rb.lost(42, 17, sid(0, 0)));
  w.write_record(rb.throttle({.time = t, .id = 42, .stream_id = 43}, sid(0, 0)));
  w.write_record(rb.unthrottle({.time = t, .id = 42, .stream_id = 43}, sid(0, 0)));
  w.write_record(rb.aux({.aux_offset = 0x100, .aux_size = 0x200, .flags = 1}, sid(7, 7)));
  w.write_record(rb.itrace_start(7, 8, sid(7, 8)));
  w.write_record(rb.lost_samples(5, sid(7, 7)));
  w.write_record(rb.switch_event(true, false, sid(7, 7)));
  w.write_record(rb.switch_event(false, false, sid(7, 7)));
  w.write_record(
      rb.switch_cpu_wide({.out = true, .preempt = true, .next_prev_pid = 11, .next_prev_tid = 12}, sid(7, 7)));
  NamespacesEvent ns{.pid = 7, .tid = 7};
  for (uint64_t i = 0; i < 7; ++i) ns.namespaces.push_back({.dev = 4, .ino = 0xeffffff0 + i});
  w.write_record(rb.namespaces(ns, sid(7, 7)));
  w.write_record(rb.ksymbol(
      {.addr = 0xffffffffc0001000ULL, .len = 0x80, .ksym_type = 1, .flags = 0, .name = "bpf_prog_1234_fn"}, sid(0, 0)));
  w.write_record(rb.bpf_event({.type = 1, .flags = 0, .id = 77, .tag = {1, 2, 3, 4, 5, 6, 7, 8}}, sid(0, 0)));
  w.write_record(rb.cgroup({.id = 0x99, .path = "/user.slice"}, sid(0, 0)));
  w.write_record(rb.text_poke(
      {.addr = 0xffffffff81000000ULL, .old_bytes = {0x0f, 0x1f}, .new_bytes = {0xe8, 0x90, 0x90}}, sid(0, 0)));
  w.write_record(rb.aux_output_hw_id(0x55, sid(7, 7)));
  Sample s{.identifier = 42, .ip = 0x400010, .pid = 7, .tid = 8, .time = t++, .cpu = 1, .period = 3};
  w.write_record(rb.sample(s));
  w.finish();

  std::string dump = run_command("perf report -D -i " + shell_quote(tmp.path()) + " 2>&1");
  const std::string expected[] = {
      "PERF_RECORD_MMAP 7/7: [0x10000(0x2000) @ 0x3000]: x /opt/old-style",
      "PERF_RECORD_MMAP2 7/8: [0x400000(0x1000) @ 0 08:02 99 3]: r-xp /usr/bin/app",
      // One line of perf's output, kept whole (too long for one source line otherwise).
      std::string("PERF_RECORD_MMAP2 7/7: [0x500000(0x1000) @ 0 <deadbeef000102030405060708090a0b0c0d0e0f>]: ") +
          "r-xp /usr/lib/libbid.so",
      "PERF_RECORD_COMM: renamed:7/8",
      "PERF_RECORD_COMM exec: app:7/7",
      "PERF_RECORD_FORK(9:9):(7:7)",
      "PERF_RECORD_EXIT(9:9):(7:7)",
      "PERF_RECORD_LOST: id:42: lost:17",
      "PERF_RECORD_THROTTLE",
      "PERF_RECORD_UNTHROTTLE",
      "PERF_RECORD_AUX offset: 0x100 size: 0x200 flags: 0x1 [T]",
      "PERF_RECORD_ITRACE_START pid: 7 tid: 8",
      "PERF_RECORD_LOST_SAMPLES: id:42: lost samples :5",
      "PERF_RECORD_SWITCH OUT",
      "PERF_RECORD_SWITCH IN",
      "PERF_RECORD_SWITCH_CPU_WIDE OUT preempt  next pid/tid:    11/12",
      "PERF_RECORD_NAMESPACES 7/7 - nr_namespaces: 7",
      "PERF_RECORD_KSYMBOL addr ffffffffc0001000 len 128 type 1 flags 0x0 name bpf_prog_1234_fn",
      "PERF_RECORD_BPF_EVENT type 1, flags 0, id 77",
      "PERF_RECORD_CGROUP cgroup: 153 /user.slice",
      "PERF_RECORD_TEXT_POKE ffffffff81000000  old len 2 new len 3",
      "PERF_RECORD_AUX_OUTPUT_HW_ID hw_id: 0x55",
      "PERF_RECORD_SAMPLE(IP, 0x2): 7/8: 0x400010 period: 3 addr: 0",
  };
  for (const std::string& e : expected) EXPECT_NE(dump.find(e), std::string::npos) << "missing: " << e << "\n" << dump;
  // Trailers: perf prints "cpu time" before each record's offset.
  EXPECT_NE(dump.find("1 1000 0x"), std::string::npos) << dump;
  // The only complaints are about the losses the LOST, LOST_SAMPLES and truncated AUX records report.
  EXPECT_NE(dump.find("Processed 23 events and lost 1 chunks!"), std::string::npos) << dump;
  EXPECT_NE(dump.find("Processed 6 samples and lost 83.33%!"), std::string::npos) << dump;
  EXPECT_NE(dump.find("AUX data lost 1 times out of 1!"), std::string::npos) << dump;
  size_t warnings = 0;
  for (size_t pos = dump.find("Warning:"); pos != std::string::npos; pos = dump.find("Warning:", pos + 1)) ++warnings;
  EXPECT_EQ(warnings, 3u) << dump;
  EXPECT_EQ(dump.find("failed"), std::string::npos) << dump;
  EXPECT_EQ(dump.find("rror"), std::string::npos) << dump;
}

// A sample with every field perf 6.1 knows, as perf decodes it.
TEST(BuilderPerfTest, PerfDumpShowsEverySampleField) {
  TPERF_REQUIRE_PROGRAM("perf");
  TempFile tmp;
  Writer w;
  w.open(tmp.path());
  PerfEventAttr a;
  a.type = kTypeHardware;
  a.size = kAttrSizeVer7;
  // Everything but IDENTIFIER, WEIGHT_STRUCT and branch counters (newer than perf 6.1).
  a.sample_type = kSampleIp | kSampleTid | kSampleTime | kSampleAddr | kSampleRead | kSampleCallchain | kSampleId |
                  kSampleCpu | kSamplePeriod | kSampleStreamId | kSampleRaw | kSampleBranchStack | kSampleRegsUser |
                  kSampleStackUser | kSampleWeight | kSampleDataSrc | kSampleTransaction | kSampleRegsIntr |
                  kSamplePhysAddr | kSampleCgroup | kSampleDataPageSize | kSampleCodePageSize | kSampleAux;
  a.read_format = kReadTotalTimeEnabled | kReadTotalTimeRunning | kReadId | kReadGroup | kReadLost;
  a.branch_sample_type = kBranchHwIndex | 1;
  a.sample_regs_user = 0x3;  // AX, BX
  a.sample_regs_intr = 0x5;  // AX, CX
  a.sample_stack_user = 64;
  a.set_flag(kFlagSampleIdAll);
  a.set_flag(kFlagExcludeKernel);
  w.add_attr(a, {77, 79}, "cycles:u");
  std::vector<uint8_t> raw = {1, 2, 3, 4, 5}, stack(64, 0x11), aux = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 0xff};
  Sample s;
  s.ip = 0x401000;
  s.pid = 1234;
  s.tid = 1235;
  s.time = 987654321012ULL;
  s.addr = 0x7ffd0000aaaaULL;
  s.id = 77;
  s.stream_id = 78;
  s.cpu = 3;
  s.period = 100003;
  s.read.time_enabled = 1000;
  s.read.time_running = 900;
  s.read.values = {{.value = 11, .id = 77, .lost = 1}, {.value = 22, .id = 79, .lost = 0}};
  s.callchain = {kContextUser, 0x401000, 0x402000};
  s.raw = raw;
  s.branch_hw_idx = 5;
  // flags: bit 0 mispredicted; 0x12 = predicted, 1 cycle.
  s.branches = {{0x401000, 0x402000, 0x1}, {0x403000, 0x404000, 0x12}};
  s.regs_user.abi = 2;
  s.regs_user.regs = {0xa0, 0xa1};
  s.stack_user = stack;
  s.stack_dyn_size = 48;
  s.weight = 250;
  s.data_src = 0x68100142ULL;
  s.transaction = 0x8;
  s.regs_intr.abi = 2;
  s.regs_intr.regs = {0xb0, 0xb2};
  s.phys_addr = 0x12345000;
  s.cgroup = 42;
  s.data_page_size = 4096;
  s.code_page_size = 2 << 20;
  s.aux = aux;
  w.write_record(w.builder(0).sample(s));
  w.finish();

  std::string dump = run_command("perf report -D -i " + shell_quote(tmp.path()) + " 2>&1");
  const char* expected[] = {
      "3 987654321012 0x108 [0x1d0]: PERF_RECORD_SAMPLE(IP, 0x2): 1234/1235: 0x401000 period: 100003 addr: "
      "0x7ffd0000aaaa\n"
      "... FP chain: nr:3\n"
      ".....  0: fffffffffffffe00\n"
      ".....  1: 0000000000401000\n"
      ".....  2: 0000000000402000\n"
      "... branch stack: nr:2\n"
      ".....  0: 0000000000401000 -> 0000000000402000 0 cycles M    0 \n"
      ".....  1: 0000000000403000 -> 0000000000404000 1 cycles  P   0 \n"
      "... user regs: mask 0x3 ABI 64-bit\n"
      ".... AX    0x00000000000000a0\n"
      ".... BX    0x00000000000000a1\n"
      "... intr regs: mask 0x5 ABI 64-bit\n"
      ".... AX    0x00000000000000b0\n"
      ".... CX    0x00000000000000b2\n"
      "... ustack: size 48, offset 0x118\n"
      "... weight: 250\n"
      " . data_src: 0x68100142\n"
      " .. phys_addr: 0x12345000\n"
      " .. data page size: 4K\n"
      " .. code page size: 2M\n"
      "... transaction: 8\n"
      "... sample_read:\n"
      "...... time enabled 00000000000003e8\n"
      "...... time running 0000000000000384\n"
      ".... group nr 2\n"
      "..... id 000000000000004d, value 000000000000000b, lost 1\n"
      "..... id 000000000000004f, value 0000000000000016, lost 0\n",
      "SAMPLE events:          1",
  };
  for (const char* e : expected) EXPECT_NE(dump.find(e), std::string::npos) << "missing: " << e << "\n" << dump;
  EXPECT_EQ(dump.find("Warning"), std::string::npos) << dump;
  EXPECT_EQ(dump.find("failed"), std::string::npos) << dump;
}

// Records perf 6.1 wrote, decoded into their structs and rebuilt, are the same bytes.
TEST(BuilderPerfTest, RebuildsRecordsPerfWrote) {
  TPERF_REQUIRE_PROGRAM("perf");
  TempFile tmp;
  int status = 0;
  std::string out = run_command("perf record -q -g -e cpu-clock -c 100000 -o " + shell_quote(tmp.path()) +
                                    " -- sh -c 'i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done' 2>&1",
                                &status);
  ASSERT_EQ(status, 0) << "set-up failed: perf record failed: " << out;
  auto r = Reader::open(tmp.path());
  ASSERT_EQ(r->attrs().size(), 1u);
  const PerfEventAttr& attr = r->attrs()[0].attr;
  RecordBuilder rb(attr, r->swapped());
  const unsigned trailer = sample_id_trailer_size(attr);
  Record rec;
  std::map<uint32_t, int> rebuilt;
  while (r->next(rec)) {
    std::vector<uint8_t> bytes(rec.bytes.begin(), rec.bytes.end());
    auto body = rec.body();
    bool sw = r->swapped();
    Sample sid_sample;
    SampleId sid;
    if (rec.type < kRecordHeaderAttr && rec.type != kRecordSample && r->decode_sample_id(rec, sid_sample)) {
      sid = {.pid = sid_sample.pid,
             .tid = sid_sample.tid,
             .time = sid_sample.time,
             .id = sid_sample.has(kSampleIdentifier) ? sid_sample.identifier : sid_sample.id,
             .stream_id = sid_sample.stream_id,
             .cpu = sid_sample.cpu};
    }
    std::vector<uint8_t> again;
    switch (rec.type) {
      case kRecordSample: {
        Sample s;
        r->decode_sample(rec, s);
        again = rb.sample(s, rec.misc);
        break;
      }
      case kRecordMmap:
        again = rb.mmap(decode_mmap(body, rec.misc, trailer, sw, rec.offset + 8), sid);
        break;
      case kRecordMmap2:
        again = rb.mmap2(decode_mmap2(body, rec.misc, trailer, sw, rec.offset + 8), sid);
        break;
      case kRecordComm:
        again = rb.comm(decode_comm(body, rec.misc, trailer, sw, rec.offset + 8), sid);
        break;
      case kRecordFork:
        again = rb.fork(decode_task(body, rec.misc, sw, rec.offset + 8), sid);
        break;
      case kRecordExit:
        again = rb.exit(decode_task(body, rec.misc, sw, rec.offset + 8), sid);
        break;
      case kRecordIdIndex:
        again = rb.id_index(decode_id_index(body, sw, rec.offset + 8));
        break;
      case kRecordThreadMap:
        again = rb.thread_map(decode_thread_map(body, sw, rec.offset + 8));
        break;
      case kRecordFinishedRound:
        again = rb.finished_round();
        break;
      case kRecordFinishedInit:
        again = rb.finished_init();
        break;
      case kRecordCpuMap: {
        // perf 6.1 writes a contiguous set as a range, anything else as a list.
        auto cpus = decode_cpu_map(body, sw, rec.offset + 8);
        bool contiguous = !cpus.empty() && cpus.back() - cpus.front() + 1 == cpus.size();
        if (contiguous) {
          again = rb.cpu_map_range(static_cast<uint16_t>(cpus.front()), static_cast<uint16_t>(cpus.back()));
        } else {
          std::vector<uint16_t> list(cpus.begin(), cpus.end());
          again = rb.cpu_map(list);
        }
        break;
      }
      case kRecordTimeConv:
        again = rb.time_conv(decode_time_conv(body, sw, rec.offset + 8));
        break;
      default:
        continue;
    }
    EXPECT_EQ(again, bytes) << record_type_name(rec.type) << " at offset " << rec.offset;
    ++rebuilt[rec.type];
  }
  EXPECT_GT(rebuilt[kRecordSample], 0);
  EXPECT_GT(rebuilt[kRecordComm], 0);
  EXPECT_GT(rebuilt[kRecordMmap2], 0);
  EXPECT_GT(rebuilt[kRecordMmap], 0);
  EXPECT_GT(rebuilt[kRecordIdIndex], 0);
  EXPECT_GT(rebuilt[kRecordThreadMap], 0);
  EXPECT_GT(rebuilt[kRecordCpuMap], 0);
  EXPECT_GT(rebuilt[kRecordFinishedRound] + rebuilt[kRecordFinishedInit], 0);
}

}  // namespace
}  // namespace tperf::perfdata
