#include "analysis/mem_sort.h"

#include <algorithm>
#include <functional>

#include "session/machine.h"
#include "symbols/symbol_table.h"
#include "util/text.h"

namespace tperf::analysis {

namespace {

struct KeyName {
  std::string_view name;
  MemKey key;
  const char* header;
};
constexpr KeyName kKeys[] = {
    {"local_weight", MemKey::kLocalWeight, "Local Weight"},
    {"weight", MemKey::kWeight, "Weight"},
    {"mem", MemKey::kMem, "Memory access"},
    {"sym", MemKey::kSym, "Symbol"},
    {"symbol", MemKey::kSym, "Symbol"},
    {"dso", MemKey::kDso, "Shared Object"},
    {"symbol_daddr", MemKey::kSymbolDaddr, "Data Symbol"},
    {"dso_daddr", MemKey::kDsoDaddr, "Data Object"},
    {"snoop", MemKey::kSnoop, "Snoop"},
    {"tlb", MemKey::kTlb, "TLB access"},
    {"locked", MemKey::kLocked, "Locked"},
    {"blocked", MemKey::kBlocked, "Blocked"},
    {"local_ins_lat", MemKey::kLocalInsLat, "Local INSTR Latency"},
    {"ins_lat", MemKey::kInsLat, "INSTR Latency"},
    {"local_p_stage_cyc", MemKey::kLocalPStageCyc, "Local Pipeline Stage Cycle"},
    {"p_stage_cyc", MemKey::kPStageCyc, "Pipeline Stage Cycle"},
    {"comm", MemKey::kComm, "Command"},
    {"pid", MemKey::kPid, "Pid:Command"},
    {"ipc_null", MemKey::kIpcNull, "IPC   [IPC Coverage]"},
};

// The parts of data_src the keys compare (perf compares the raw field, not its text).
uint64_t lvl_of(uint64_t ds) { return (ds >> 5) & 0x3fff; }
uint64_t snoop_of(uint64_t ds) { return (ds >> 19) & 0x1f; }
uint64_t lock_of(uint64_t ds) { return (ds >> 24) & 0x3; }
uint64_t tlb_of(uint64_t ds) { return (ds >> 26) & 0x7f; }
uint64_t blk_of(uint64_t ds) { return (ds >> 40) & 0x7; }

int cmp_u64(uint64_t a, uint64_t b) { return a < b ? -1 : a > b ? 1 : 0; }

std::string_view dso_name(const Location& loc) { return loc.dso ? loc.dso->short_name() : std::string_view{}; }

}  // namespace

std::string parse_mem_sort_keys(std::string_view spec, std::vector<MemKey>* out) {
  out->clear();
  for (const std::string& tok : util::split_commas(spec)) {
    const KeyName* found = nullptr;
    for (const KeyName& k : kKeys) {
      if (k.name == tok) found = &k;
    }
    if (!found) return std::string(tok);
    out->push_back(found->key);
  }
  return {};
}

const char* mem_key_header(MemKey key) {
  for (const KeyName& k : kKeys) {
    if (k.key == key) return k.header;
  }
  return "";
}

bool is_common_mem_key(MemKey key) {
  switch (key) {
    case MemKey::kMem:
    case MemKey::kSymbolDaddr:
    case MemKey::kDsoDaddr:
    case MemKey::kSnoop:
    case MemKey::kTlb:
    case MemKey::kLocked:
    case MemKey::kBlocked:
    case MemKey::kIpcNull: return false;
    default: return true;
  }
}

bool wants_weight_report(std::string_view sort) {
  std::vector<MemKey> keys;
  if (sort.empty() || !parse_mem_sort_keys(sort, &keys).empty()) return false;
  bool weight = false;
  for (MemKey k : keys) {
    if (!is_common_mem_key(k)) return false;
    if (k != MemKey::kSym && k != MemKey::kDso && k != MemKey::kComm && k != MemKey::kPid) weight = true;
  }
  return weight;
}

bool mem_key_hidden(MemKey key) { return key == MemKey::kLocalPStageCyc || key == MemKey::kPStageCyc; }

int MemHist::compare(MemKey key, const MemEntry& a, const MemEntry& b) const {
  switch (key) {
    case MemKey::kLocalWeight: return cmp_u64(b.local_weight(), a.local_weight());
    case MemKey::kWeight: return cmp_u64(b.weight, a.weight);
    case MemKey::kLocalInsLat: return cmp_u64(b.local_ins_lat(), a.local_ins_lat());
    case MemKey::kInsLat: return cmp_u64(b.ins_lat, a.ins_lat);
    case MemKey::kLocalPStageCyc: return cmp_u64(b.local_p_stage_cyc(), a.local_p_stage_cyc());
    case MemKey::kPStageCyc: return cmp_u64(b.p_stage_cyc, a.p_stage_cyc);
    case MemKey::kMem: return cmp_u64(lvl_of(a.data_src), lvl_of(b.data_src));
    case MemKey::kSnoop: return cmp_u64(snoop_of(a.data_src), snoop_of(b.data_src));
    case MemKey::kTlb: return cmp_u64(tlb_of(a.data_src), tlb_of(b.data_src));
    case MemKey::kLocked: return cmp_u64(lock_of(a.data_src), lock_of(b.data_src));
    case MemKey::kBlocked: return cmp_u64(blk_of(a.data_src), blk_of(b.data_src));
    case MemKey::kSym: {
      const Location &l = a.self.loc, &r = b.self.loc;
      if (l.sym && r.sym) return l.sym == r.sym ? 0 : cmp_u64(l.sym_start, r.sym_start);
      if (!l.sym && !r.sym) return cmp_u64(l.addr, r.addr);
      return l.sym ? 1 : -1;
    }
    case MemKey::kDso: return dso_name(a.self.loc).compare(dso_name(b.self.loc));
    case MemKey::kSymbolDaddr: return cmp_u64(a.daddr, b.daddr);
    case MemKey::kDsoDaddr: return dso_name(a.data).compare(dso_name(b.data));
    case MemKey::kComm: {
      // (A std::string and "" would meet in a temporary std::string the views outlive.)
      const std::string_view l = a.self.comm ? std::string_view(*a.self.comm) : std::string_view();
      const std::string_view r = b.self.comm ? std::string_view(*b.self.comm) : std::string_view();
      return l.compare(r);
    }
    case MemKey::kPid: return cmp_u64(static_cast<uint32_t>(a.self.pid), static_cast<uint32_t>(b.self.pid));
    case MemKey::kIpcNull: return compare(MemKey::kSym, a, b);  // perf's ipc_null keys by the symbol
  }
  return 0;
}

bool MemHist::same(const MemEntry& a, const MemEntry& b) const {
  for (MemKey k : keys_) {
    if (compare(k, a, b) != 0) return false;
  }
  return true;
}

size_t MemHist::hash_of(const MemEntry& e) const {
  size_t h = 0;
  auto mix = [&](uint64_t v) { h = h * 1000003u ^ std::hash<uint64_t>{}(v); };
  for (MemKey k : keys_) {
    switch (k) {
      case MemKey::kMem: mix(lvl_of(e.data_src)); break;
      case MemKey::kSnoop: mix(snoop_of(e.data_src)); break;
      case MemKey::kTlb: mix(tlb_of(e.data_src)); break;
      case MemKey::kLocked: mix(lock_of(e.data_src)); break;
      case MemKey::kBlocked: mix(blk_of(e.data_src)); break;
      case MemKey::kSym:
      case MemKey::kIpcNull: mix(e.self.loc.sym ? reinterpret_cast<uintptr_t>(e.self.loc.sym) : e.self.loc.addr); break;
      case MemKey::kDso: mix(std::hash<std::string_view>{}(dso_name(e.self.loc))); break;
      case MemKey::kSymbolDaddr: mix(e.daddr); break;
      case MemKey::kDsoDaddr: mix(std::hash<std::string_view>{}(dso_name(e.data))); break;
      case MemKey::kComm: mix(std::hash<std::string_view>{}(e.self.comm ? std::string_view(*e.self.comm) : std::string_view())); break;
      case MemKey::kPid: mix(static_cast<uint32_t>(e.self.pid)); break;
      // An entry takes a sample only when its mean equals the sample's value, so its mean stays
      // its first sample's value: hashable. The sums change as samples add up: compared only.
      case MemKey::kLocalWeight: mix(e.local_weight()); break;
      case MemKey::kLocalInsLat: mix(e.local_ins_lat()); break;
      case MemKey::kLocalPStageCyc: mix(e.local_p_stage_cyc()); break;
      default: break;
    }
  }
  return h;
}

void MemHist::add(const MemEntry& sample) {
  const uint64_t cost = sample.period;
  MemEntry s = sample;  // an entry of one sample, as the keys compare it
  s.samples = 1;
  total_period_ += cost;
  total_weight_ += s.weight;
  ++total_samples_;
  const size_t h = hash_of(s);
  auto [it, end] = index_.equal_range(h);
  for (; it != end; ++it) {
    MemEntry& e = entries_[it->second];
    if (!same(e, s)) continue;
    e.period += cost;
    e.samples += 1;
    e.weight += s.weight;
    e.ins_lat += s.ins_lat;
    e.p_stage_cyc += s.p_stage_cyc;
    return;
  }
  index_.emplace(h, entries_.size());
  entries_.push_back(s);
}

std::vector<const MemEntry*> MemHist::sorted() const {
  std::vector<const MemEntry*> out;
  out.reserve(entries_.size());
  for (const MemEntry& e : entries_) out.push_back(&e);
  std::stable_sort(out.begin(), out.end(), [&](const MemEntry* a, const MemEntry* b) {
    if (a->period != b->period) return a->period > b->period;
    for (MemKey k : keys_) {
      // perf's output sort takes symbols by name where its entries are told apart by address,
      // and two unresolved addresses as equal: the keys after it (the dso) decide.
      if (k == MemKey::kSym || k == MemKey::kIpcNull) {
        if (!a->self.loc.sym && !b->self.loc.sym) continue;
        if (!a->self.loc.sym || !b->self.loc.sym) return a->self.loc.sym != nullptr;  // resolved first
        if (int c = a->self.loc.sym->name().compare(b->self.loc.sym->name())) return c < 0;
        continue;
      }
      if (int c = compare(k, *a, *b)) return c < 0;
    }
    // Ties keep the order of perf's input tree, where unresolved addresses go by address.
    if (!a->self.loc.sym && !b->self.loc.sym) return a->self.loc.addr < b->self.loc.addr;
    return false;
  });
  return out;
}

}  // namespace tperf::analysis
