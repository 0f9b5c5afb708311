// The header features `perf record` writes about the machine it ran on (hostname, kernel
// release, arch, CPUs, memory, CPU/NUMA/cache/memory topology, PMUs), read from uname, /proc and
// /sys, set on a perfdata::Writer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "perfdata/features.h"
#include "perfdata/writer.h"

namespace tperf::record {

struct HostInfo {
  std::string hostname, osrelease, arch, cpudesc, cpuid;
  uint32_t nr_cpus_available = 0, nr_cpus_online = 0;
  uint64_t total_mem_kb = 0;
  perfdata::CpuTopology cpu_topology;
  std::vector<perfdata::NumaNode> numa_nodes;
  std::vector<std::pair<uint32_t, std::string>> pmu_mappings;
  std::vector<perfdata::CacheLevel> caches;
  perfdata::MemTopology mem_topology;
};

// Reads everything from this machine; what cannot be read stays empty (and is then not written).
HostInfo read_host_info();

// The CPU sets that share a core / package / NUMA node with each other, for --threads grouping:
// each result lists the member CPUs of one group, in CPU order, restricted to `cpus`.
enum class CpuGrouping { kCpu, kCore, kPackage, kNuma };
std::vector<std::vector<int>> group_cpus(const std::vector<int>& cpus, CpuGrouping grouping);

// Sets HOSTNAME, OSRELEASE, VERSION, ARCH, NRCPUS, CPUDESC, CPUID, TOTAL_MEM, CMDLINE,
// CPU_TOPOLOGY, NUMA_TOPOLOGY, PMU_MAPPINGS, CACHE and MEM_TOPOLOGY from `info`.
void set_host_features(perfdata::Writer& writer, const HostInfo& info, const std::vector<std::string>& cmdline,
                       const std::string& version);

}  // namespace tperf::record
