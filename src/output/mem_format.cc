#include "output/mem_format.h"

#include <fmt/format.h>

#include <array>
#include <string_view>

namespace tperf::output {

DataSrc DataSrc::decode(uint64_t v) {
  DataSrc d;
  d.op = v & 0x1f;
  d.lvl = (v >> 5) & 0x3fff;
  d.snoop = (v >> 19) & 0x1f;
  d.lock = (v >> 24) & 0x3;
  d.dtlb = (v >> 26) & 0x7f;
  d.lvl_num = (v >> 33) & 0xf;
  d.remote = (v >> 37) & 0x1;
  d.snoopx = (v >> 38) & 0x3;
  d.blk = (v >> 40) & 0x7;
  d.hops = (v >> 43) & 0x7;
  return d;
}

namespace {

// Names of a bit field's bits, lowest first; HIT and MISS (bits 1 and 2) of the level and TLB
// fields are said after the others as " hit" / " miss".
constexpr std::array<std::string_view, 7> kTlbNames = {"N/A", "HIT", "MISS", "L1", "L2", "Walker", "Fault"};
constexpr std::array<std::string_view, 14> kLvlNames = {
    "N/A",       "HIT",      "MISS", "L1", "LFB/MAB", "L2", "L3", "Local RAM", "Remote RAM (1 hop)", "Remote RAM (2 hops)",
    "Remote Cache (1 hop)", "Remote Cache (2 hops)", "I/O", "Uncached"};
constexpr std::array<std::string_view, 5> kSnoopNames = {"N/A", "None", "Hit", "Miss", "HitM"};
constexpr std::array<std::string_view, 2> kSnoopxNames = {"Fwd", "Peer"};
constexpr std::array<std::string_view, 5> kHopNames = {"N/A", "core, same node", "node, same socket",
                                                        "socket, same board", "board"};

// The level numbers with a name (the others print as "L<n>").
std::string_view lvl_num_name(uint64_t n) {
  switch (n) {
    case 0xb: return "Any cache";
    case 0xc: return "LFB/MAB";
    case 0xd: return "RAM";
    case 0xe: return "PMEM";
    case 0xf: return "N/A";
    default: return {};
  }
}

// The set bits of `bits` named from `names`, joined by " or ".
template <size_t N>
void append_bits(std::string& out, uint64_t bits, const std::array<std::string_view, N>& names) {
  for (size_t i = 0; bits != 0 && i < N; ++i, bits >>= 1) {
    if (!(bits & 1)) continue;
    if (!out.empty()) out += " or ";
    out += names[i];
  }
}

}  // namespace

std::string mem_op_text(uint64_t data_src) {
  const uint64_t op = DataSrc::decode(data_src).op;
  if (op & 1) return "N/A";
  if (op & 2) return "LOAD";
  if (op & 4) return "STORE";
  if (op & 8) return "PFETCH";
  if (op & 0x10) return "EXEC";
  return "No";
}

std::string mem_lvl_text(uint64_t data_src) {
  const DataSrc d = DataSrc::decode(data_src);
  // "Remote ", then the hops when there are (else the level bits other than HIT and MISS), then
  // the level number; what was hit or missed comes last.
  std::string out;
  if (d.remote) out += "Remote ";
  bool printed = false;
  if (d.hops) {
    out += d.hops < kHopNames.size() ? kHopNames[d.hops] : std::string_view{};
    out += ' ';
  } else {
    std::string bits;
    append_bits(bits, d.lvl & ~uint64_t{6}, kLvlNames);
    printed = !bits.empty();
    out += bits;
  }
  if (d.lvl_num) {
    if (printed) out += " or ";
    std::string_view name = lvl_num_name(d.lvl_num);
    out += name.empty() ? fmt::format("L{}", d.lvl_num) : std::string(name);
  }
  if (out.empty()) out = "N/A";
  if (d.lvl & 2) out += " hit";
  if (d.lvl & 4) out += " miss";
  return out;
}

std::string mem_snoop_text(uint64_t data_src) {
  const DataSrc d = DataSrc::decode(data_src);
  std::string out;
  append_bits(out, d.snoop, kSnoopNames);
  append_bits(out, d.snoopx, kSnoopxNames);
  if (out.empty()) out = "N/A";
  return out;
}

std::string mem_tlb_text(uint64_t data_src) {
  const DataSrc d = DataSrc::decode(data_src);
  std::string out;
  append_bits(out, d.dtlb & ~uint64_t{6}, kTlbNames);
  if (out.empty()) out = "N/A";
  if (d.dtlb & 2) out += " hit";
  if (d.dtlb & 4) out += " miss";
  return out;
}

std::string mem_lock_text(uint64_t data_src) {
  const uint64_t lock = DataSrc::decode(data_src).lock;
  if (lock & 1) return "N/A";
  if (lock & 2) return "Yes";
  return "No";
}

std::string mem_blk_text(uint64_t data_src) {
  const uint64_t blk = DataSrc::decode(data_src).blk;
  if (blk == 0 || (blk & 1)) return " N/A";
  std::string out;
  if (blk & 2) out += " Data";
  if (blk & 4) out += " Addr";
  return out;
}

std::string script_mem_info(uint64_t data_src) {
  std::string out = "|OP " + mem_op_text(data_src);
  out += "|LVL " + mem_lvl_text(data_src);
  out += "|SNP " + mem_snoop_text(data_src);
  out += "|TLB " + mem_tlb_text(data_src);
  out += "|LCK " + mem_lock_text(data_src);
  out += "|BLK " + mem_blk_text(data_src);
  // perf decodes into a 100-byte buffer.
  if (out.size() > 99) out.resize(99);
  return out;
}

void DataSrcColumn::append(std::string& out, uint64_t data_src) {
  std::string text = fmt::format("{:16x} {}", data_src, script_mem_info(data_src));
  if (text.size() > 99) text.resize(99);  // perf's line buffer is 100 bytes too
  if (text.size() > max_len_) max_len_ = text.size();
  out += text;
  out.append(max_len_ - text.size(), ' ');
}

}  // namespace tperf::output
