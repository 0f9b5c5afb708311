#include "record/build_id_collector.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <unordered_map>

#include "perfdata/abi.h"
#include "perfdata/reader.h"
#include "perfdata/records.h"

namespace tperf::record {

using namespace perfdata;

std::optional<util::BuildId> vdso_build_id() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.size() < 6 || line.compare(line.size() - 6, 6, "[vdso]") != 0) continue;
    uint64_t start = 0, end = 0;
    char dash;
    std::istringstream in(line);
    in >> std::hex >> start >> dash >> end;
    if (!in || end <= start || end - start > (64u << 20)) return std::nullopt;
    return util::read_build_id_from_memory(
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(start), static_cast<size_t>(end - start)));
  }
  return std::nullopt;
}

namespace {

struct Dso {
  std::string name;
  bool kernel = false;
  std::vector<uint8_t> mmap_build_id;  // from an MMAP2 with MISC_MMAP_BUILD_ID
  bool hit = false;
};

struct MapRange {
  uint64_t end = 0;
  uint32_t dso = 0;
};

// Address -> DSO for one address space; inserting a map cuts whatever it overlaps.
class MapTable {
 public:
  void insert(uint64_t start, uint64_t len, uint32_t dso) {
    if (len == 0) return;
    uint64_t end = start + len < start ? ~0ULL : start + len;
    auto it = maps_.lower_bound(start);
    if (it != maps_.begin()) {
      auto prev = std::prev(it);
      if (prev->second.end > start) {
        MapRange tail = prev->second;
        prev->second.end = start;
        if (tail.end > end) maps_[end] = tail;
      }
    }
    it = maps_.lower_bound(start);
    while (it != maps_.end() && it->first < end) {
      if (it->second.end > end) {
        MapRange tail = it->second;
        maps_.erase(it);
        maps_[end] = tail;
        break;
      }
      it = maps_.erase(it);
    }
    maps_[start] = MapRange{end, dso};
  }
  const MapRange* find(uint64_t addr) const {
    auto it = maps_.upper_bound(addr);
    if (it == maps_.begin()) return nullptr;
    --it;
    return addr < it->second.end ? &it->second : nullptr;
  }
  void clear() { maps_.clear(); }
  bool empty() const { return maps_.empty(); }

 private:
  std::map<uint64_t, MapRange> maps_;
};

class Tracker {
 public:
  uint32_t dso(const std::string& name, bool kernel) {
    auto key = std::make_pair(name, kernel);
    auto it = index_.find(key);
    if (it != index_.end()) return it->second;
    dsos_.push_back(Dso{name, kernel, {}, false});
    uint32_t i = static_cast<uint32_t>(dsos_.size() - 1);
    index_.emplace(key, i);
    return i;
  }
  MapTable& space(int32_t pid) { return spaces_[pid]; }
  MapTable& kernel() { return kernel_; }
  std::vector<Dso>& dsos() { return dsos_; }
  std::vector<uint32_t>& hit_order() { return hit_order_; }
  void hit(uint32_t d) {
    if (!dsos_[d].hit) {
      dsos_[d].hit = true;
      hit_order_.push_back(d);
    }
  }
  bool has_space(int32_t pid) const { return spaces_.count(pid) != 0; }

 private:
  std::vector<Dso> dsos_;
  std::map<std::pair<std::string, bool>, uint32_t> index_;
  std::unordered_map<int32_t, MapTable> spaces_;
  MapTable kernel_;
  std::vector<uint32_t> hit_order_;
};

void add_map(Tracker& t, int32_t pid, uint16_t misc, uint64_t addr, uint64_t len, const std::string& filename,
             const std::vector<uint8_t>* build_id) {
  uint16_t mode = misc & kMiscCpumodeMask;
  bool kernel = mode == kMiscKernel || mode == kMiscGuestKernel;
  if (misc & kMiscMmapData) return;  // data maps never hold a sample ip
  std::string name = filename;
  if (kernel && name.rfind("[kernel.kallsyms]", 0) == 0) name = "[kernel.kallsyms]";
  uint32_t d = t.dso(name, kernel);
  if (build_id && !build_id->empty() && t.dsos()[d].mmap_build_id.empty()) t.dsos()[d].mmap_build_id = *build_id;
  if (kernel)
    t.kernel().insert(addr, len, d);
  else
    t.space(pid).insert(addr, len, d);
}

}  // namespace

std::vector<BuildIdEntry> collect_build_ids(const std::string& path, BuildIdStats* stats) {
  auto reader = Reader::open(path);
  Tracker t;
  BuildIdStats st;
  Record rec;
  Sample s;
  const bool swap = reader->swapped();
  while (reader->next(rec)) {
    const EventAttr* ea = nullptr;
    switch (rec.type) {
      case kRecordMmap: {
        ea = reader->attr_of(rec);
        unsigned trailer = ea ? sample_id_trailer_size(ea->attr) : 0;
        auto m = decode_mmap(rec.body(), rec.misc, trailer, swap, rec.offset);
        add_map(t, m.pid, rec.misc, m.addr, m.len, m.filename, nullptr);
        break;
      }
      case kRecordMmap2: {
        ea = reader->attr_of(rec);
        unsigned trailer = ea ? sample_id_trailer_size(ea->attr) : 0;
        auto m = decode_mmap2(rec.body(), rec.misc, trailer, swap, rec.offset);
        add_map(t, m.pid, rec.misc, m.addr, m.len, m.filename, &m.build_id);
        break;
      }
      case kRecordComm: {
        if (!(rec.misc & kMiscCommExec)) break;
        ea = reader->attr_of(rec);
        unsigned trailer = ea ? sample_id_trailer_size(ea->attr) : 0;
        auto c = decode_comm(rec.body(), rec.misc, trailer, swap, rec.offset);
        t.space(c.pid).clear();
        break;
      }
      case kRecordFork: {
        auto f = decode_task(rec.body(), rec.misc, swap, rec.offset);
        // A new process starts with a copy of its parent's maps (fork without exec).
        if (f.pid != f.ppid && f.pid == f.tid && t.has_space(f.ppid) && !t.has_space(f.pid)) {
          MapTable copy = t.space(f.ppid);
          t.space(f.pid) = std::move(copy);
        }
        break;
      }
      case kRecordSample: {
        reader->decode_sample(rec, s);
        ++st.samples;
        uint16_t mode = rec.misc & kMiscCpumodeMask;
        const MapRange* m = nullptr;
        if (mode == kMiscKernel || mode == kMiscGuestKernel) {
          m = t.kernel().find(s.ip);
        } else if (t.has_space(static_cast<int32_t>(s.pid))) {
          m = t.space(static_cast<int32_t>(s.pid)).find(s.ip);
        }
        if (m)
          t.hit(m->dso);
        else
          ++st.unresolved;
        break;
      }
      default:
        break;
    }
  }

  std::vector<BuildIdEntry> out;
  std::optional<util::BuildId> kernel_id, vdso_id;
  bool kernel_read = false, vdso_read = false;
  for (uint32_t d : t.hit_order()) {
    const Dso& dso = t.dsos()[d];
    ++st.dsos_hit;
    std::optional<util::BuildId> id;
    if (!dso.mmap_build_id.empty()) {
      id = util::BuildId::from_bytes(dso.mmap_build_id);
    } else if (dso.kernel && dso.name == "[kernel.kallsyms]") {
      if (!kernel_read) kernel_id = util::running_kernel_build_id(), kernel_read = true;
      id = kernel_id;
    } else if (dso.name == "[vdso]") {
      if (!vdso_read) vdso_id = vdso_build_id(), vdso_read = true;
      id = vdso_id;
    } else if (!dso.name.empty() && dso.name[0] == '/') {
      id = util::read_build_id(dso.name);
    }
    if (!id || id->empty()) {
      ++st.without_build_id;
      continue;
    }
    BuildIdEntry e;
    e.misc = dso.kernel ? kMiscKernel : kMiscUser;
    e.pid = -1;
    e.build_id.assign(id->bytes.begin(), id->bytes.begin() + id->size);
    e.filename = dso.name;
    out.push_back(std::move(e));
  }
  if (stats) *stats = st;
  return out;
}

}  // namespace tperf::record
