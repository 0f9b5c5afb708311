#include "record/proc_synthesis.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <string_view>

#include "perfdata/abi.h"
#include "record/build_id_collector.h"
#include "util/build_id.h"

namespace tperf::record {

using namespace perfdata;

namespace {

// Reads a whole (small, procfs) file; false when it cannot be opened.
bool read_file(const std::string& path, std::string& out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  out.clear();
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      return n == 0;
    }
    out.append(buf, static_cast<size_t>(n));
  }
}

std::vector<int32_t> numeric_entries(const std::string& dir) {
  std::vector<int32_t> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    const char* n = e->d_name;
    if (*n < '0' || *n > '9') continue;
    int32_t v = 0;
    auto [p, ec] = std::from_chars(n, n + std::strlen(n), v);
    if (ec == std::errc() && *p == '\0') out.push_back(v);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

template <class T>
bool parse_hex(std::string_view s, T& v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  return ec == std::errc() && p == s.data() + s.size();
}

// A per-run cache of build ids by path (many processes map the same libraries).
class BuildIdCache {
 public:
  std::vector<uint8_t> get(const std::string& path) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = cache_.find(path);
      if (it != cache_.end()) return it->second;
    }
    std::vector<uint8_t> bytes;
    if (!path.empty() && path[0] == '/') {
      if (auto id = util::read_build_id(path)) bytes.assign(id->bytes.begin(), id->bytes.begin() + id->size);
    }
    std::lock_guard<std::mutex> lock(mu_);
    cache_.emplace(path, bytes);
    return bytes;
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::vector<uint8_t>> cache_;
};

struct Synthesizer {
  const RecordBuilder& rb;
  const SynthesisOptions& options;
  BuildIdCache* build_ids;

  std::string task_path(int32_t pid, int32_t tid, const char* file) const {
    return options.proc_dir + "/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/" + file;
  }

  std::optional<TaskStatus> status(int32_t pid, int32_t tid) const {
    std::string text;
    if (!read_file(task_path(pid, tid, "status"), text)) return std::nullopt;
    return parse_task_status(text);
  }

  void comm(std::vector<uint8_t>& out, const TaskStatus& st, int32_t tid) const {
    CommEvent c;
    c.pid = st.tgid;
    c.tid = tid;
    c.comm = st.name.substr(0, 15);
    auto rec = rb.comm(c);
    out.insert(out.end(), rec.begin(), rec.end());
  }

  // False when the maps file could not be read (perf then stops with this process).
  bool mmaps(std::vector<uint8_t>& out, int32_t pid, int32_t tgid, uint64_t* count) const {
    std::string text;
    if (!read_file(task_path(pid, pid, "maps"), text)) return false;
    size_t pos = 0;
    while (pos < text.size()) {
      size_t nl = text.find('\n', pos);
      std::string_view line(text.data() + pos, (nl == std::string::npos ? text.size() : nl) - pos);
      pos = nl == std::string::npos ? text.size() : nl + 1;
      auto m = parse_maps_line(line);
      if (!m) continue;
      Mmap2Event e;
      e.misc = kMiscUser;
      if (!(m->prot & PROT_EXEC)) {
        if (!options.mmap_data || !(m->prot & PROT_READ)) continue;
        e.misc |= kMiscMmapData;
      }
      e.pid = tgid;
      e.tid = pid;
      e.addr = m->start;
      e.len = m->end - m->start;
      e.pgoff = m->pgoff;
      e.maj = m->maj;
      e.min = m->min;
      e.ino = m->inode;
      e.prot = m->prot;
      e.flags = m->flags;
      e.filename = m->path.empty() ? "//anon" : m->path;
      if (options.buildid_mmap && build_ids) {
        e.build_id = build_ids->get(e.filename);
        if (!e.build_id.empty()) e.misc |= kMiscMmapBuildId;
      }
      auto rec = rb.mmap2(e);
      out.insert(out.end(), rec.begin(), rec.end());
      ++*count;
    }
    return true;
  }

  // perf's full synthesis of one /proc entry: every thread gets FORK + COMM, the leader its maps.
  void process(std::vector<uint8_t>& out, int32_t pid, SynthesisStats& stats) const {
    auto tids = process_threads(pid, options.proc_dir);
    bool counted = false;
    for (int32_t tid : tids) {
      auto st = status(pid, tid);
      if (!st || st->tgid < 0) continue;
      TaskEvent f;
      f.pid = st->tgid;
      f.tid = tid;
      f.ppid = f.ptid = tid == st->tgid ? st->ppid : st->tgid;
      f.misc = kMiscForkExec;
      auto rec = rb.fork(f);
      out.insert(out.end(), rec.begin(), rec.end());
      comm(out, *st, tid);
      ++stats.threads;
      if (!counted) {
        ++stats.processes;
        counted = true;
      }
      if (tid == pid && !st->kernel_thread && !mmaps(out, pid, st->tgid, &stats.maps)) break;
    }
  }
};

}  // namespace

std::optional<TaskStatus> parse_task_status(std::string_view text) {
  TaskStatus st;
  bool have_name = false, have_tgid = false, vmpeak = false, threads = false;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, (nl == std::string_view::npos ? text.size() : nl) - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    auto value = [&](std::string_view key) -> std::optional<std::string_view> {
      if (line.substr(0, key.size()) != key) return std::nullopt;
      std::string_view v = line.substr(key.size());
      while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
      return v;
    };
    auto number = [](std::string_view v, int32_t& out) {
      auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
      return ec == std::errc();
    };
    if (auto v = value("Name:")) {
      st.name = std::string(*v);
      have_name = true;
    } else if (auto v2 = value("Tgid:")) {
      have_tgid = number(*v2, st.tgid);
    } else if (auto v3 = value("PPid:")) {
      number(*v3, st.ppid);
    } else if (value("VmPeak:")) {
      vmpeak = true;
    } else if (value("Threads:")) {
      threads = true;
    }
  }
  if (!have_name && !have_tgid) return std::nullopt;
  st.kernel_thread = !vmpeak && threads;
  return st;
}

std::optional<MapsLine> parse_maps_line(std::string_view line) {
  // 00400000-0040c000 r-xp 00000000 fd:01 41038      /bin/cat
  MapsLine m;
  auto field = [&](std::string_view& rest) {
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    size_t sp = rest.find(' ');
    std::string_view f = rest.substr(0, sp);
    rest = sp == std::string_view::npos ? std::string_view() : rest.substr(sp);
    return f;
  };
  std::string_view rest = line;
  std::string_view range = field(rest), perms = field(rest), off = field(rest), dev = field(rest), inode = field(rest);
  size_t dash = range.find('-');
  size_t colon = dev.find(':');
  if (dash == std::string_view::npos || colon == std::string_view::npos || perms.size() != 4) return std::nullopt;
  if (!parse_hex(range.substr(0, dash), m.start) || !parse_hex(range.substr(dash + 1), m.end) || m.end < m.start) {
    return std::nullopt;
  }
  if (!parse_hex(off, m.pgoff) || !parse_hex(dev.substr(0, colon), m.maj) || !parse_hex(dev.substr(colon + 1), m.min)) {
    return std::nullopt;
  }
  auto [p, ec] = std::from_chars(inode.data(), inode.data() + inode.size(), m.inode);
  if (ec != std::errc() || p != inode.data() + inode.size()) return std::nullopt;
  if (perms[0] == 'r') m.prot |= PROT_READ; else if (perms[0] != '-') return std::nullopt;
  if (perms[1] == 'w') m.prot |= PROT_WRITE; else if (perms[1] != '-') return std::nullopt;
  if (perms[2] == 'x') m.prot |= PROT_EXEC; else if (perms[2] != '-') return std::nullopt;
  if (perms[3] == 's') m.flags = MAP_SHARED;
  else if (perms[3] == 'p') m.flags = MAP_PRIVATE;
  else return std::nullopt;
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  // perf keeps at most PATH_MAX - 1 bytes and names longer paths "//toolong".
  m.path = rest.size() >= 4096 ? "//toolong" : std::string(rest);
  return m;
}

std::vector<int32_t> process_threads(int32_t pid, const std::string& proc_dir) {
  return numeric_entries(proc_dir + "/" + std::to_string(pid) + "/task");
}

SynthesisStats synthesize_all_tasks(const RecordBuilder& rb, util::WorkQueue& wq, const SynthesisOptions& options,
                                    const RecordSink& sink) {
  BuildIdCache cache;
  Synthesizer syn{rb, options, &cache};
  std::vector<int32_t> pids = numeric_entries(options.proc_dir);
  SynthesisStats total;
  // Batches bound the memory held between reading and writing; inside a batch each process
  // gets its own buffer, written in /proc order once the batch is done.
  constexpr size_t kBatch = 256;
  std::vector<std::vector<uint8_t>> bufs(std::min(kBatch, pids.size()));
  std::vector<SynthesisStats> stats(bufs.size());
  for (size_t base = 0; base < pids.size(); base += kBatch) {
    size_t n = std::min(kBatch, pids.size() - base);
    wq.parallel_for(0, n, [&](size_t i) {
      bufs[i].clear();
      stats[i] = {};
      syn.process(bufs[i], pids[base + i], stats[i]);
    });
    for (size_t i = 0; i < n; ++i) {
      // Records of one process go out one at a time (the sink may compress or count them).
      std::span<const uint8_t> rest(bufs[i]);
      while (rest.size() >= 8) {
        uint16_t size;
        std::memcpy(&size, rest.data() + 6, 2);
        if (size < 8 || size > rest.size()) break;
        sink(rest.first(size));
        rest = rest.subspan(size);
      }
      total.processes += stats[i].processes;
      total.threads += stats[i].threads;
      total.maps += stats[i].maps;
    }
  }
  return total;
}

SynthesisStats synthesize_threads(const RecordBuilder& rb, std::span<const int32_t> tids,
                                  const SynthesisOptions& options, const RecordSink& sink) {
  BuildIdCache cache;
  Synthesizer syn{rb, options, &cache};
  SynthesisStats stats;
  std::vector<uint8_t> buf;
  auto one = [&](int32_t tid) -> std::optional<TaskStatus> {
    // The thread's own status; its process id is found from it.
    std::string text;
    if (!read_file(options.proc_dir + "/" + std::to_string(tid) + "/status", text)) return std::nullopt;
    auto st = parse_task_status(text);
    if (!st || st->tgid < 0) return std::nullopt;
    syn.comm(buf, *st, tid);
    ++stats.threads;
    if (tid == st->tgid) {
      ++stats.processes;
      syn.mmaps(buf, tid, st->tgid, &stats.maps);
    }
    return st;
  };
  for (int32_t tid : tids) {
    auto st = one(tid);
    if (st && st->tgid != tid && std::find(tids.begin(), tids.end(), st->tgid) == tids.end()) one(st->tgid);
  }
  std::span<const uint8_t> rest(buf);
  while (rest.size() >= 8) {
    uint16_t size;
    std::memcpy(&size, rest.data() + 6, 2);
    if (size < 8 || size > rest.size()) break;
    sink(rest.first(size));
    rest = rest.subspan(size);
  }
  return stats;
}

bool synthesize_comm(const RecordBuilder& rb, int32_t tid, const SynthesisOptions& options, const RecordSink& sink) {
  std::string text;
  if (!read_file(options.proc_dir + "/" + std::to_string(tid) + "/status", text)) return false;
  auto st = parse_task_status(text);
  if (!st) return false;
  CommEvent c;
  c.pid = st->tgid;
  c.tid = tid;
  c.comm = st->name.substr(0, 15);
  sink(rb.comm(c));
  return true;
}

bool synthesize_kernel_maps(const RecordBuilder& rb, const SynthesisOptions& options, const RecordSink& sink) {
  std::ifstream in(options.proc_dir + "/kallsyms");
  std::string line;
  uint64_t text = 0, etext = 0;
  while ((text == 0 || etext == 0) && std::getline(in, line)) {
    // "ffffffff81000000 T _text"
    size_t sp1 = line.find(' ');
    if (sp1 == std::string::npos || sp1 + 3 > line.size()) continue;
    std::string_view name = std::string_view(line).substr(sp1 + 3);
    if (name != "_text" && name != "_etext") continue;
    uint64_t addr = 0;
    if (!parse_hex(std::string_view(line).substr(0, sp1), addr)) continue;
    (name == "_text" ? text : etext) = addr;
  }
  if (text == 0) return false;
  if (etext <= text) etext = ~0ULL;
  if (options.buildid_mmap) {
    Mmap2Event e;
    e.misc = kMiscKernel;
    e.pid = -1;
    e.tid = 0;
    e.addr = text;
    e.len = etext - text;
    e.pgoff = text;
    e.prot = 0;
    e.flags = 0;
    e.filename = "[kernel.kallsyms]_text";
    if (auto id = util::running_kernel_build_id()) {
      e.build_id.assign(id->bytes.begin(), id->bytes.begin() + id->size);
      e.misc |= kMiscMmapBuildId;
    }
    sink(rb.mmap2(e));
  } else {
    MmapEvent e;
    e.misc = kMiscKernel;
    e.pid = -1;
    e.tid = 0;
    e.addr = text;
    e.len = etext - text;
    e.pgoff = text;
    e.filename = "[kernel.kallsyms]_text";
    sink(rb.mmap(e));
  }
  // Modules: "name size refcount deps state 0xaddr".
  std::ifstream mods(options.proc_dir + "/modules");
  while (std::getline(mods, line)) {
    std::vector<std::string_view> f;
    std::string_view rest(line);
    while (!rest.empty()) {
      size_t sp = rest.find(' ');
      f.push_back(rest.substr(0, sp));
      if (sp == std::string_view::npos) break;
      rest = rest.substr(sp + 1);
    }
    if (f.size() < 6) continue;
    uint64_t size = 0, addr = 0;
    std::string_view a = f[5];
    if (a.substr(0, 2) == "0x") a.remove_prefix(2);
    if (!parse_hex(a, addr) || addr == 0) continue;
    auto [p, ec] = std::from_chars(f[1].data(), f[1].data() + f[1].size(), size);
    if (ec != std::errc()) continue;
    MmapEvent e;
    e.misc = kMiscKernel;
    e.pid = -1;
    e.tid = 0;
    e.addr = addr;
    e.len = size;
    e.pgoff = 0;
    e.filename = "[" + std::string(f[0]) + "]";
    sink(rb.mmap(e));
  }
  return true;
}

}  // namespace tperf::record
