// The text of a memory sample's data source (PERF_SAMPLE_DATA_SRC, union perf_mem_data_src) as
// perf 6.1 prints it: the parts report's memory sort keys show (mem level, snoop, TLB, locked,
// blocked) and script's `|OP ..|LVL ..|SNP ..|TLB ..|LCK ..|BLK ..` column, which pads each line
// to the widest one printed so far.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tperf::output {

// The fields of a data_src value (include/uapi/linux/perf_event.h's bit layout).
struct DataSrc {
  uint64_t op = 0;       // 5 bits: NA, LOAD, STORE, PFETCH, EXEC
  uint64_t lvl = 0;      // 14 bits: NA, HIT, MISS, L1, LFB, L2, L3, local RAM, remote RAM/caches, I/O, uncached
  uint64_t snoop = 0;    // 5 bits: NA, NONE, HIT, MISS, HITM
  uint64_t lock = 0;     // 2 bits: NA, LOCKED
  uint64_t dtlb = 0;     // 7 bits: NA, HIT, MISS, L1, L2, walker, OS fault
  uint64_t lvl_num = 0;  // 4 bits: cache level number, or ANY_CACHE, LFB, RAM, PMEM, NA
  uint64_t remote = 0;   // 1 bit
  uint64_t snoopx = 0;   // 2 bits: FWD, PEER
  uint64_t blk = 0;      // 3 bits: NA, DATA, ADDR
  uint64_t hops = 0;     // 3 bits
  static DataSrc decode(uint64_t value);
};

// perf's mem_info texts, one per report sort key.
std::string mem_op_text(uint64_t data_src);     // "LOAD", "STORE", "N/A", ...
std::string mem_lvl_text(uint64_t data_src);    // "L1 hit", "Remote RAM (1 hop) hit", "N/A", ...
std::string mem_snoop_text(uint64_t data_src);  // "None", "Hit or HitM", "N/A", ...
std::string mem_tlb_text(uint64_t data_src);    // "L1 or L2 hit", "N/A", ...
std::string mem_lock_text(uint64_t data_src);   // "Yes", "No", "N/A"
std::string mem_blk_text(uint64_t data_src);    // " Data Addr", " N/A" (perf's leading space)

// perf script's decoding: "|OP LOAD|LVL L1 hit|SNP None|TLB L1 or L2 hit|LCK No|BLK  N/A".
std::string script_mem_info(uint64_t data_src);

// perf script's data_src column: the value in hex (16 wide), a space and its decoding, padded to
// the widest such text printed so far (one per script run, as perf keeps it).
class DataSrcColumn {
 public:
  void append(std::string& out, uint64_t data_src);

 private:
  size_t max_len_ = 0;
};

}  // namespace tperf::output
