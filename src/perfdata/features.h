// The feature sections of a perf.data file (HEADER_* bits): the ones a report shows are parsed,
// every other one is kept as raw bytes. Pipe-mode files deliver the same payloads as records.
#pragma once

#include <bitset>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "perfdata/abi.h"
#include "perfdata/attr.h"

namespace tperf::perfdata {

struct BuildIdEntry {
  uint16_t misc = 0;  // cpumode | kMiscBuildIdSize
  int32_t pid = -1;
  std::vector<uint8_t> build_id;  // 20 bytes unless the size byte says otherwise
  std::string filename;
};

struct EventDescEntry {
  PerfEventAttr attr;
  std::string name;
  std::vector<uint64_t> ids;
};

struct GroupDescEntry {
  std::string name;
  uint32_t leader_idx = 0;
  uint32_t nr_members = 0;
};

struct CpuTopology {
  std::vector<std::string> core_siblings;
  std::vector<std::string> thread_siblings;
  struct Cpu {
    uint32_t core_id = 0;
    uint32_t socket_id = 0;
    uint32_t die_id = 0;
  };
  std::vector<Cpu> cpus;
  std::vector<std::string> die_siblings;
  bool has_die = false;
};

struct NumaNode {
  uint32_t node = 0;
  uint64_t mem_total = 0;
  uint64_t mem_free = 0;
  std::string cpus;
};

struct CacheLevel {
  uint32_t level = 0, line_size = 0, sets = 0, ways = 0;
  std::string type, size, map;
};

struct CompressedInfo {
  uint32_t version = 0, type = 0, level = 0, ratio = 0, mmap_len = 0;
};

struct ClockData {
  uint32_t version = 0;
  uint32_t clockid = 0;
  uint64_t wall_clock_ns = 0;
  uint64_t clockid_ns = 0;
};

// One PMU of PMU_CAPS (HYBRID_CPU_PMU_CAPS in perf <= 6.1, same layout).
struct PmuCaps {
  std::string pmu_name;
  std::vector<std::pair<std::string, std::string>> caps;  // name, value
};

struct MemTopologyNode {
  uint64_t node = 0;
  uint64_t size = 0;                 // bytes
  uint64_t nbits = 0;                // bits in the memory-block bitmap
  std::vector<uint64_t> bitmap;      // (nbits + 63) / 64 words
};

struct MemTopology {
  uint64_t version = 0;
  uint64_t block_size = 0;
  std::vector<MemTopologyNode> nodes;
};

// One BPF program of BPF_PROG_INFO: the parts of struct bpf_prog_info (and of the arrays perf
// stores after it) that a report shows. Counts are as declared; an array perf did not store
// comes out empty.
struct BpfProgInfo {
  uint32_t id = 0;
  std::string name;  // bpf_prog_info.name, at most 16 bytes
  uint32_t btf_id = 0;
  uint32_t nr_jited_ksyms = 0, nr_jited_func_lens = 0, nr_prog_tags = 0, nr_func_info = 0;
  std::vector<uint64_t> jited_ksyms;      // start address of each sub-program
  std::vector<uint32_t> jited_func_lens;  // size of each sub-program
  std::vector<uint64_t> prog_tags;        // 8-byte tag of each sub-program, first byte lowest
  std::vector<uint32_t> func_type_ids;    // BTF type of each sub-program (func_info[i].type_id)
};

// One BTF blob of BPF_BTF.
struct BpfBtf {
  uint32_t id = 0;
  std::vector<uint8_t> data;
};

// One entry of the AUXTRACE feature: where an AUXTRACE record sits in the file.
struct AuxtraceIndexEntry {
  uint64_t file_offset = 0;
  uint64_t size = 0;
};

struct Features {
  std::bitset<kFeatBits> present;
  // Payload bytes of every feature seen, in file byte order.
  std::map<unsigned, std::vector<uint8_t>> raw;
  // Non-fatal problems found while parsing (a malformed section is reported, never fatal).
  std::vector<std::string> warnings;

  std::string hostname, osrelease, version, arch, cpudesc, cpuid;
  // TRACING_DATA: tracepoint id -> "system:name", the names of tracepoint events no EVENT_DESC
  // names (perf 3.x files).
  std::map<uint64_t, std::string> tracepoint_names;
  uint32_t nr_cpus_available = 0, nr_cpus_online = 0;
  uint64_t total_mem_kb = 0;
  std::vector<std::string> cmdline;
  std::vector<EventDescEntry> event_desc;
  std::vector<BuildIdEntry> build_ids;
  CpuTopology cpu_topology;
  std::vector<NumaNode> numa_topology;
  std::vector<std::pair<uint32_t, std::string>> pmu_mappings;
  std::vector<GroupDescEntry> group_desc;
  std::vector<CacheLevel> caches;
  uint64_t first_sample_time = 0, last_sample_time = 0;
  uint64_t clockid_res_ns = 0;
  uint64_t dir_format_version = 0;
  CompressedInfo compressed;
  ClockData clock_data;
  std::vector<std::pair<std::string, std::string>> hybrid_topology;  // pmu name, cpus
  std::vector<std::pair<std::string, std::string>> cpu_pmu_caps;
  std::vector<PmuCaps> pmu_caps;
  MemTopology mem_topology;
  std::vector<AuxtraceIndexEntry> auxtrace_index;
  std::vector<BpfProgInfo> bpf_progs;
  std::vector<BpfBtf> bpf_btfs;
  // Bits whose payload parsed without error (a subset of `present`).
  std::bitset<kFeatBits> parsed;

  bool has(unsigned bit) const { return bit < kFeatBits && present.test(bit); }

  // Parses one feature payload; `offset` is the file offset of the payload for messages.
  // A malformed payload is recorded in `warnings` (with its offset) and the raw bytes kept.
  // A bit parsed again replaces its fields, except BUILD_ID whose entries accumulate (pipe
  // mode delivers them one HEADER_BUILD_ID record at a time).
  void parse(unsigned bit, std::span<const uint8_t> payload, bool swap, uint64_t offset);
};

// HEADER_* name as perf spells it in "missing features:" ("TRACING_DATA", "BUILD_ID",
// "HOSTNAME", ...), simpleperf's for 128..132 ("SIMPLEPERF_FILE", ...), else "feature_<n>".
std::string feature_name(unsigned bit);

// True for the bits tperf decodes field by field (the rest are kept raw only).
bool feature_known(unsigned bit);

// The name of BTF type `type_id` in a BTF blob (as stored by BPF_BTF), or nullopt when the
// blob is not valid BTF or has no such type. Type 0 is "void", whose name is empty.
std::optional<std::string> btf_type_name(std::span<const uint8_t> btf, uint32_t type_id);

}  // namespace tperf::perfdata
