#include "record/host_features.h"

#include <dirent.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "perfdata/record_builder.h"
#include "record/perf_event.h"

namespace tperf::record {

using namespace perfdata;

namespace {

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  return line;
}

bool read_u32(const std::string& path, uint32_t& v) {
  std::ifstream in(path);
  return static_cast<bool>(in >> v);
}

std::vector<std::string> dir_entries(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n.rfind(prefix, 0) == 0 && n.size() > prefix.size() &&
          n.find_first_not_of("0123456789", prefix.size()) == std::string::npos) {
        out.push_back(n);
      }
    }
    ::closedir(d);
  }
  std::sort(out.begin(), out.end(), [&](const std::string& a, const std::string& b) {
    return std::stoul(a.substr(prefix.size())) < std::stoul(b.substr(prefix.size()));
  });
  return out;
}

std::string squeeze_spaces(const std::string& s) {
  std::string out;
  for (char c : s) {
    if ((c == ' ' || c == '\t') && (out.empty() || out.back() == ' ')) continue;
    out += c == '\t' ? ' ' : c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string cpu_dir(int cpu) { return "/sys/devices/system/cpu/cpu" + std::to_string(cpu); }

}  // namespace

HostInfo read_host_info() {
  HostInfo h;
  struct utsname u;
  if (::uname(&u) == 0) {
    h.hostname = u.nodename;
    h.osrelease = u.release;
    h.arch = u.machine;
  }
  h.nr_cpus_available = static_cast<uint32_t>(std::max(1L, ::sysconf(_SC_NPROCESSORS_CONF)));
  h.nr_cpus_online = static_cast<uint32_t>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));

  {
    std::ifstream in("/proc/cpuinfo");
    std::string line, vendor, family, model, stepping;
    auto value = [](const std::string& l) {
      auto c = l.find(':');
      std::string v = c == std::string::npos ? "" : l.substr(c + 1);
      while (!v.empty() && v.front() == ' ') v.erase(v.begin());
      return v;
    };
    auto key = [](const std::string& l) {
      auto c = l.find(':');
      std::string k = l.substr(0, c);
      while (!k.empty() && (k.back() == ' ' || k.back() == '\t')) k.pop_back();
      return k;
    };
    while (std::getline(in, line)) {
      if (line.empty()) break;  // the first CPU is enough
      std::string k = key(line);
      if (k == "model name") h.cpudesc = squeeze_spaces(value(line));
      else if (k == "vendor_id") vendor = value(line);
      else if (k == "cpu family") family = value(line);
      else if (k == "model") model = value(line);
      else if (k == "stepping") stepping = value(line);
    }
    if (!vendor.empty() && !family.empty()) h.cpuid = vendor + "," + family + "," + model + "," + stepping;
  }
  {
    std::ifstream in("/proc/meminfo");
    std::string k;
    uint64_t v;
    if (in >> k >> v && k == "MemTotal:") h.total_mem_kb = v;
  }

  // CPU topology over every possible CPU index below nr_cpus_available, as perf does.
  {
    CpuTopology& t = h.cpu_topology;
    std::vector<std::string> cores, threads, dies;
    bool die_info = true;
    for (uint32_t cpu = 0; cpu < h.nr_cpus_available; ++cpu) {
      std::string topo = cpu_dir(static_cast<int>(cpu)) + "/topology/";
      std::string core = read_line(topo + "core_siblings_list");
      std::string thread = read_line(topo + "thread_siblings_list");
      std::string die = read_line(topo + "die_cpus_list");
      if (!core.empty() && std::find(cores.begin(), cores.end(), core) == cores.end()) cores.push_back(core);
      if (!thread.empty() && std::find(threads.begin(), threads.end(), thread) == threads.end()) threads.push_back(thread);
      if (die.empty()) die_info = false;
      else if (std::find(dies.begin(), dies.end(), die) == dies.end()) dies.push_back(die);
      CpuTopology::Cpu c;
      read_u32(topo + "core_id", c.core_id);
      read_u32(topo + "physical_package_id", c.socket_id);
      read_u32(topo + "die_id", c.die_id);
      t.cpus.push_back(c);
    }
    t.core_siblings = cores;
    t.thread_siblings = threads;
    t.die_siblings = dies;
    t.has_die = die_info && !dies.empty();
    if (cores.empty()) t = CpuTopology{};
  }

  for (const auto& node : dir_entries("/sys/devices/system/node", "node")) {
    std::string dir = "/sys/devices/system/node/" + node;
    NumaNode n;
    n.node = static_cast<uint32_t>(std::stoul(node.substr(4)));
    std::ifstream mi(dir + "/meminfo");
    std::string line;
    while (std::getline(mi, line)) {
      std::istringstream ls(line);
      std::string w1, w2, key;
      uint64_t v = 0;
      if (!(ls >> w1 >> w2 >> key >> v)) continue;
      if (key == "MemTotal:") n.mem_total = v;
      if (key == "MemFree:") n.mem_free = v;
    }
    n.cpus = read_line(dir + "/cpulist");
    h.numa_nodes.push_back(std::move(n));
  }

  if (DIR* d = ::opendir("/sys/bus/event_source/devices")) {
    std::vector<std::pair<uint32_t, std::string>> pmus;
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n == "." || n == "..") continue;
      uint32_t type;
      if (read_u32("/sys/bus/event_source/devices/" + n + "/type", type)) pmus.emplace_back(type, n);
    }
    ::closedir(d);
    // Directory order, as perf lists them.
    h.pmu_mappings = std::move(pmus);
  }

  {
    std::vector<CacheLevel> caches;
    for (uint32_t cpu = 0; cpu < h.nr_cpus_available; ++cpu) {
      std::string base = cpu_dir(static_cast<int>(cpu)) + "/cache/";
      for (const auto& idx : dir_entries(base, "index")) {
        std::string dir = base + idx + "/";
        CacheLevel c;
        if (!read_u32(dir + "level", c.level)) continue;
        read_u32(dir + "coherency_line_size", c.line_size);
        read_u32(dir + "number_of_sets", c.sets);
        read_u32(dir + "ways_of_associativity", c.ways);
        c.type = read_line(dir + "type");
        c.size = read_line(dir + "size");
        c.map = read_line(dir + "shared_cpu_list");
        bool dup = std::any_of(caches.begin(), caches.end(), [&](const CacheLevel& o) {
          return o.level == c.level && o.type == c.type && o.size == c.size && o.map == c.map &&
                 o.line_size == c.line_size && o.sets == c.sets && o.ways == c.ways;
        });
        if (!dup) caches.push_back(std::move(c));
      }
    }
    std::stable_sort(caches.begin(), caches.end(),
                     [](const CacheLevel& a, const CacheLevel& b) { return a.level < b.level; });
    h.caches = std::move(caches);
  }

  {
    std::ifstream bs("/sys/devices/system/memory/block_size_bytes");
    uint64_t block = 0;
    if (bs >> std::hex >> block && block > 0) {
      MemTopology m;
      m.version = 1;
      m.block_size = block;
      for (const auto& node : dir_entries("/sys/devices/system/node", "node")) {
        std::string dir = "/sys/devices/system/node/" + node;
        std::vector<uint64_t> blocks;
        for (const auto& mem : dir_entries(dir, "memory")) blocks.push_back(std::stoull(mem.substr(6)));
        if (blocks.empty()) continue;
        MemTopologyNode n;
        n.node = std::stoull(node.substr(4));
        n.nbits = blocks.back() + 1;
        n.size = n.nbits;
        n.bitmap.assign(n.nbits / 64 + (n.nbits % 64 != 0), 0);
        for (uint64_t b : blocks) n.bitmap[b / 64] |= 1ULL << (b % 64);
        m.nodes.push_back(std::move(n));
      }
      if (!m.nodes.empty()) h.mem_topology = std::move(m);
    }
  }
  return h;
}

std::vector<std::vector<int>> group_cpus(const std::vector<int>& cpus, CpuGrouping grouping) {
  std::vector<std::vector<int>> groups;
  if (grouping == CpuGrouping::kCpu) {
    for (int c : cpus) groups.push_back({c});
    return groups;
  }
  std::map<std::string, std::vector<int>> by_key;
  std::vector<std::string> order;
  std::map<int, std::string> numa_of;
  if (grouping == CpuGrouping::kNuma) {
    for (const auto& node : dir_entries("/sys/devices/system/node", "node")) {
      for (int c : read_cpu_list_file("/sys/devices/system/node/" + node + "/cpulist")) numa_of[c] = node;
    }
  }
  for (int c : cpus) {
    std::string key;
    std::string topo = cpu_dir(c) + "/topology/";
    if (grouping == CpuGrouping::kCore) key = read_line(topo + "thread_siblings_list");
    if (grouping == CpuGrouping::kPackage) key = read_line(topo + "core_siblings_list");
    if (grouping == CpuGrouping::kNuma) key = numa_of.count(c) ? numa_of[c] : "";
    if (key.empty()) key = "cpu" + std::to_string(c);
    if (!by_key.count(key)) order.push_back(key);
    by_key[key].push_back(c);
  }
  for (const auto& k : order) groups.push_back(by_key[k]);
  return groups;
}

void set_host_features(Writer& w, const HostInfo& h, const std::vector<std::string>& cmdline,
                       const std::string& version) {
  const bool swap = w.swapped();
  w.set_hostname(h.hostname);
  if (!h.osrelease.empty()) w.set_osrelease(h.osrelease);
  w.set_version(version);
  if (!h.arch.empty()) w.set_arch(h.arch);
  w.set_nrcpus(h.nr_cpus_available, h.nr_cpus_online);
  if (!h.cpudesc.empty()) w.set_cpudesc(h.cpudesc);
  if (!h.cpuid.empty()) w.set_cpuid(h.cpuid);
  if (h.total_mem_kb) w.set_total_mem(h.total_mem_kb);
  w.set_cmdline(cmdline);
  if (!h.cpu_topology.core_siblings.empty()) w.set_feature(kFeatCpuTopology, feature_cpu_topology(h.cpu_topology, swap));
  if (!h.numa_nodes.empty()) w.set_feature(kFeatNumaTopology, feature_numa_topology(h.numa_nodes, swap));
  if (!h.pmu_mappings.empty()) w.set_feature(kFeatPmuMappings, feature_pmu_mappings(h.pmu_mappings, swap));
  if (!h.caches.empty()) w.set_feature(kFeatCache, feature_cache(h.caches, swap));
  if (!h.mem_topology.nodes.empty()) w.set_feature(kFeatMemTopology, feature_mem_topology(h.mem_topology, swap));
}

}  // namespace tperf::record
