// The machine model: threads, processes and their address spaces, kernel maps and DSOs, updated
// from side-band records the way perf's machine/thread/maps code does (facts from perf 6.1's
// behaviour, see reference/perf-abi.md §7.1), but with plain ownership instead of refcounts.
#include "session/machine.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <limits>

#include "perfdata/abi.h"
#include "perfdata/attr.h"
#include "perfdata/features.h"
#include "perfdata/records.h"

namespace tperf::session {

using perfdata::kMiscCpumodeMask;

// ---------------------------------------------------------------------------------------------
// StringPool, Dso

const std::string* StringPool::intern(std::string_view s) {
  auto it = strings_.find(s);
  if (it != strings_.end()) return &*it;
  bytes_ += s.size();
  return &*strings_.emplace(s).first;
}

std::string_view Dso::short_name() const {
  if (short_name_str) return *short_name_str;
  return name ? std::string_view(*name) : std::string_view();
}

namespace {

std::string_view basename_of(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// perf's short name of a kernel module path: "[name]", extension(s) dropped, '-' as '_'.
std::string module_short_name(std::string_view path) {
  std::string_view base = basename_of(path);
  size_t ko = base.find(".ko");
  if (ko != std::string_view::npos) base = base.substr(0, ko);
  std::string out = "[";
  for (char c : base) out.push_back(c == '-' ? '_' : c);
  out.push_back(']');
  return out;
}

std::string short_name_for(std::string_view name, bool kernel) {
  if (name.empty() || name.front() != '/') return std::string(name);
  if (kernel) return module_short_name(name);
  int tid = 0;
  char tail = 0;
  // perf names the JIT symbol files of anonymous executable memory this way.
  std::string n(name);
  if (std::sscanf(n.c_str(), "/tmp/perf-%d.map%c", &tid, &tail) == 1) return fmt::format("[JIT] tid {}", tid);
  return std::string(basename_of(name));
}

BuildId to_build_id(const std::vector<uint8_t>& bytes) { return BuildId::from_bytes(bytes); }

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

uint64_t end_of(uint64_t start, uint64_t len) { return len > kMax - start ? kMax : start + len; }

bool is_kernel_cpumode(uint16_t misc) { return (misc & kMiscCpumodeMask) == perfdata::kMiscKernel; }
bool is_guest_cpumode(uint16_t misc) {
  uint16_t m = misc & kMiscCpumodeMask;
  return m == perfdata::kMiscGuestKernel || m == perfdata::kMiscGuestUser;
}

constexpr const char kKernelDsoName[] = "[kernel.kallsyms]";

}  // namespace

Dso* DsoTable::create(std::string_view name, const BuildId& build_id, bool kernel) {
  auto dso = std::make_unique<Dso>();
  dso->id = static_cast<uint32_t>(dsos_.size());
  dso->name = strings_.intern(name);
  dso->build_id = build_id;
  dso->kernel = kernel;
  std::string short_name = short_name_for(name, kernel);
  if (short_name != name) dso->short_name_str = strings_.intern(short_name);
  Dso* raw = dso.get();
  dsos_.push_back(std::move(dso));
  next_same_name_.push_back(kNone);
  return raw;
}

Dso* DsoTable::intern(std::string_view name, const BuildId& build_id, bool kernel) {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) {
    Dso* d = create(name, build_id, kernel);
    by_name_.emplace(std::string_view(*d->name), d->id);
    return d;
  }
  uint32_t first = it->second;
  if (build_id.empty()) return dsos_[first].get();
  // A DSO of that name with this build id, else the first one still without a build id.
  Dso* without = nullptr;
  uint32_t last = first;
  for (uint32_t i = first; i != kNone; i = next_same_name_[i]) {
    Dso* d = dsos_[i].get();
    if (d->build_id == build_id) return d;
    if (!without && d->build_id.empty()) without = d;
    last = i;
  }
  if (without) {
    without->build_id = build_id;
    return without;
  }
  Dso* d = create(name, build_id, kernel);
  next_same_name_[last] = d->id;
  return d;
}

Dso* DsoTable::find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : dsos_[it->second].get();
}

void DsoTable::apply_build_ids(const std::vector<perfdata::BuildIdEntry>& entries) {
  for (const auto& e : entries) {
    if (e.filename.empty() || e.build_id.empty()) continue;
    uint16_t mode = e.misc & kMiscCpumodeMask;
    bool kernel = mode == perfdata::kMiscKernel || mode == perfdata::kMiscGuestKernel;
    intern(e.filename, to_build_id(e.build_id), kernel)->listed = true;
  }
}

// ---------------------------------------------------------------------------------------------
// AddressSpace

uint64_t AddressSpace::next_version() {
  static std::atomic<uint64_t> counter{0};
  return counter.fetch_add(1, std::memory_order_relaxed) + 1;
}

void AddressSpace::insert(const Map& map) {
  if (map.end <= map.start) return;  // an empty map can never be found
  touch();
  // Maps do not overlap, so their ends are sorted too: the first one ending after map.start is
  // the first that may overlap.
  auto lo = std::partition_point(maps_.begin(), maps_.end(), [&](const Map& m) { return m.end <= map.start; });
  auto hi = lo;
  while (hi != maps_.end() && hi->start < map.end) ++hi;

  Map pieces[3];
  size_t n = 0;
  if (lo != hi && lo->start < map.start) {
    pieces[n] = *lo;  // the head of an older map, left of the new one
    pieces[n++].end = map.start;
  }
  pieces[n++] = map;
  if (lo != hi && std::prev(hi)->end > map.end) {
    const Map& old = *std::prev(hi);
    Map tail = old;  // the tail right of the new one, still mapping the same file offsets
    tail.start = map.end;
    tail.pgoff = old.pgoff + (map.end - old.start);
    pieces[n++] = tail;
  }

  size_t first = static_cast<size_t>(lo - maps_.begin());
  size_t removed = static_cast<size_t>(hi - lo);
  if (n <= removed) {
    std::copy_n(pieces, n, maps_.begin() + static_cast<ptrdiff_t>(first));
    maps_.erase(maps_.begin() + static_cast<ptrdiff_t>(first + n), maps_.begin() + static_cast<ptrdiff_t>(first + removed));
  } else {
    std::copy_n(pieces, removed, maps_.begin() + static_cast<ptrdiff_t>(first));
    maps_.insert(maps_.begin() + static_cast<ptrdiff_t>(first + removed), pieces + removed, pieces + n);
  }
}

const Map* AddressSpace::find(uint64_t addr) const {
  auto it = std::upper_bound(maps_.begin(), maps_.end(), addr, [](uint64_t a, const Map& m) { return a < m.start; });
  if (it == maps_.begin()) return nullptr;
  --it;
  return it->contains(addr) ? &*it : nullptr;
}

// ---------------------------------------------------------------------------------------------
// Thread

const std::string* Thread::comm_at(uint64_t time) const {
  if (comms_.empty()) return nullptr;
  // Entries are in the order they were set (perf's comm list); scan from the newest.
  for (auto it = comms_.rbegin(); it != comms_.rend(); ++it) {
    if (it->time <= time) return it->comm;
  }
  return comms_.front().comm;
}

// ---------------------------------------------------------------------------------------------
// Machine

struct Machine::Process {
  int32_t pid = -1;
  AddressSpace space;
  size_t threads = 0;
};

Machine::Machine() : Machine(Options{}) {}

Machine::Machine(Options options) : options_(options), dsos_(strings_) {}

Machine::~Machine() = default;

Machine::Process& Machine::process_of(int32_t pid) {
  auto& slot = processes_[pid];
  if (!slot) {
    slot = std::make_unique<Process>();
    slot->pid = pid;
    stats_.address_spaces_peak = std::max(stats_.address_spaces_peak, processes_.size() + detached_.size());
  }
  return *slot;
}

Machine::Process& Machine::fresh_process(int32_t pid) {
  auto it = processes_.find(pid);
  if (it != processes_.end()) {
    // pid reuse: threads still held keep the old space, the new process starts empty.
    if (it->second->threads > 0) {
      detached_.push_back(std::move(it->second));
    } else {
      total_maps_ -= it->second->space.size();
    }
    processes_.erase(it);
  }
  return process_of(pid);
}

Machine::Process* Machine::process_holding(const Thread& t) const {
  if (!t.maps_) return nullptr;
  auto it = processes_.find(t.pid_);
  if (it != processes_.end() && &it->second->space == t.maps_) return it->second.get();
  for (const auto& p : detached_) {
    if (&p->space == t.maps_) return p.get();
  }
  for (const auto& [pid, p] : processes_) {  // only after a pid change gone wrong
    if (&p->space == t.maps_) return p.get();
  }
  return nullptr;
}

void Thread::copy_to(Thread& out, AddressSpace* maps) const {
  out.pid_ = pid_;
  out.tid_ = tid_;
  out.ppid_ = ppid_;
  out.comms_ = comms_;
  out.maps_ = maps;
  out.exited_ = exited_;
  out.exit_time_ = exit_time_;
  out.start_time_ = start_time_;
}

void Machine::join(Thread& t, Process& p) {
  t.maps_ = &p.space;
  ++p.threads;
}

void Machine::leave(Thread& t) {
  Process* p = process_holding(t);
  t.maps_ = nullptr;
  if (!p || --p->threads > 0) return;
  total_maps_ -= p->space.size();
  auto it = processes_.find(p->pid);
  if (it != processes_.end() && it->second.get() == p) {
    processes_.erase(it);
    return;
  }
  auto d = std::find_if(detached_.begin(), detached_.end(), [&](const auto& q) { return q.get() == p; });
  if (d != detached_.end()) detached_.erase(d);
}

Thread& Machine::new_thread(int32_t pid, int32_t tid, int32_t ppid, uint64_t time) {
  auto t = std::make_unique<Thread>();
  t->pid_ = pid;
  t->tid_ = tid;
  t->ppid_ = ppid;
  t->start_time_ = time;
  Thread& ref = *t;
  last_found_ = nullptr;  // a thread of this tid, if any, is replaced
  threads_[tid] = std::move(t);
  stats_.threads_peak = std::max(stats_.threads_peak, threads_.size());
  return ref;
}

void Machine::release_thread(int32_t tid) {
  auto it = threads_.find(tid);
  if (it == threads_.end()) return;
  leave(*it->second);
  if (last_found_ == it->second.get()) last_found_ = nullptr;
  threads_.erase(it);
  ++stats_.threads_released;
}

Thread* Machine::find_thread(int32_t tid) const {
  auto it = threads_.find(tid);
  return it == threads_.end() ? nullptr : it->second.get();
}

Thread& Machine::findnew_thread(int32_t pid, int32_t tid) {
  // Most samples are of the thread the one before was of: that one is kept at hand.
  if (last_found_ && last_found_->tid_ == tid && (last_found_->pid_ == pid || pid == -1)) return *last_found_;
  if (Thread* t = find_thread(tid)) {
    last_found_ = t;
    // A thread first seen without its pid joins its process once the pid is known (perf too).
    if (t->pid_ == -1 && pid != -1) {
      leave(*t);
      t->pid_ = pid;
      if (pid != tid && processes_.find(pid) == processes_.end()) findnew_thread(pid, pid);
      join(*t, process_of(pid));
    }
    return *t;
  }
  if (pid != tid && pid != -1 && processes_.find(pid) == processes_.end()) {
    findnew_thread(pid, pid);  // perf creates the group leader to hold the process's maps
  }
  Thread& t = new_thread(pid, tid, -1, 0);
  join(t, process_of(pid));
  return t;
}

void Machine::insert_map(AddressSpace& space, const Map& map) {
  size_t before = space.size();
  space.insert(map);
  total_maps_ = total_maps_ - before + space.size();
  stats_.maps_peak = std::max(stats_.maps_peak, total_maps_);
}

void Machine::clear_space(AddressSpace& space) {
  total_maps_ -= space.size();
  space.clear();
}

void Machine::set_comm(Thread& t, std::string_view comm, uint64_t time, bool exec) {
  // perf overrides the default ":tid" comm of a thread that never had one and otherwise adds to
  // the history; with no stored default entry both are an append here.
  t.comms_.push_back(Thread::Comm{time, strings_.intern(comm), exec});
}

void Machine::on_comm(const perfdata::CommEvent& e, uint64_t time) {
  Thread& t = findnew_thread(e.pid, e.tid);
  bool exec = e.exec || (e.misc & perfdata::kMiscCommExec);
  set_comm(t, e.comm, time, exec);
  if (exec && !options_.keep_maps_on_exec && t.maps_) clear_space(*t.maps_);
}

void Machine::on_fork(const perfdata::TaskEvent& e) {
  Thread* parent = &findnew_thread(e.ppid, e.ptid);
  if (parent->pid_ != e.ppid) {
    // A stale thread holds the parent's tid (its FORK or EXIT was lost): forget it.
    release_thread(e.ptid);
    parent = &findnew_thread(e.ppid, e.ptid);
  }
  bool new_process = e.pid != e.ppid;
  // Synthesized forks (FORK_EXEC) are followed by the process's own synthesized MMAPs.
  bool copy_maps = new_process && !(e.misc & perfdata::kMiscForkExec) && parent->maps_;
  const std::string* parent_comm = parent->comm();
  int32_t parent_tid = parent->tid_;
  std::vector<Map> parent_maps;
  if (copy_maps) parent_maps = parent->maps_->maps();
  // tid reuse: the old task is gone for good (perf drops it here even when keeping exited ones).
  release_thread(e.tid);
  parent = nullptr;

  Thread& child = new_thread(e.pid, e.tid, parent_tid, e.time);
  if (new_process) {
    Process& p = fresh_process(e.pid);
    join(child, p);
    total_maps_ += parent_maps.size();
    stats_.maps_peak = std::max(stats_.maps_peak, total_maps_);
    p.space.maps_ = std::move(parent_maps);
    p.space.touch();
  } else {
    join(child, process_of(e.pid));
  }
  // The child starts with the parent's current comm, from the fork on.
  if (parent_comm) child.comms_.push_back(Thread::Comm{e.time, parent_comm, false});
}

void Machine::on_exit(const perfdata::TaskEvent& e) {
  Thread* t = find_thread(e.tid);
  if (!t) return;
  t->exited_ = true;
  t->exit_time_ = e.time;
  if (options_.keep_exited && !options_.drop_exited_maps) return;
  // Kept sorted by exit time; records come nearly in order, so this is an append.
  auto pos = exited_.end();
  while (pos != exited_.begin() && std::prev(pos)->first > e.time) --pos;
  exited_.insert(pos, {e.time, e.tid});
}

void Machine::retire_exited(uint64_t time) {
  // A task still runs briefly after its EXIT record (and trace decoders emit samples stamped
  // before its end), so samples later than the exit keep coming for a while: keep the thread
  // until the stream is exit_grace_ns past its exit.
  if (time < options_.exit_grace_ns) return;
  const uint64_t limit = time - options_.exit_grace_ns;
  while (!exited_.empty() && exited_.front().first < limit) {
    auto [exit_time, tid] = exited_.front();
    exited_.pop_front();
    Thread* t = find_thread(tid);
    // The tid may belong to a newer task by now (released at its FORK).
    if (!t || !t->exited_ || t->exit_time_ != exit_time) continue;
    if (options_.keep_exited) {
      leave(*t);  // frees the process's space with its last thread
    } else {
      release_thread(tid);
    }
  }
}

void Machine::on_kernel_map(uint64_t start, uint64_t len, uint64_t pgoff, const std::string& name,
                            const BuildId& bid) {
  Map m;
  m.start = start;
  m.end = end_of(start, len);
  m.pgoff = pgoff;
  m.prot = 5;  // r-x
  std::string_view n = name;
  std::string_view kernel_prefix(kKernelDsoName, sizeof(kKernelDsoName) - 2);  // perf compares without ']'
  if (n.starts_with(kernel_prefix)) {
    m.dso = dsos_.intern(kKernelDsoName, bid, true);
    if (start == 0 && len == 0) m.end = kMax;  // some files carry a zero-sized kernel map
  } else if (!n.empty() && (n.front() == '/' || n.front() == '[')) {
    m.dso = dsos_.intern(n, bid, true);  // a module
    m.pgoff = 0;
  } else {
    m.dso = dsos_.intern(kKernelDsoName, {}, true);  // an extra kernel map (entry trampolines)
  }
  insert_map(kernel_, m);
}

namespace {

bool is_vdso(std::string_view n) { return n == "[vdso]"; }

// perf's anonymous and file-less memory, whose addresses are used as they are.
bool is_anon_name(std::string_view n) {
  return n == "//anon" || n.starts_with("/dev/zero") || n.starts_with("/anon_hugepage");
}
bool is_no_dso_name(std::string_view n) { return n.starts_with("[stack") || n.starts_with("/SYSV") || n == "[heap]"; }

}  // namespace

Dso* Machine::user_dso(Map& m, const Thread& t, const std::string& filename, const BuildId& bid) {
  if (is_anon_name(filename) || is_no_dso_name(filename)) {
    m.identity = true;
    // Executable anonymous memory is JIT code; perf names it after the symbol file a JIT writes.
    if (m.prot & 4) return dsos_.intern(fmt::format("/tmp/perf-{}.map", t.pid()), {}, false);
  }
  Dso* dso = dsos_.intern(filename, bid, false);
  if (dso->first_pid < 0) dso->first_pid = t.pid();
  return dso;
}

void Machine::on_mmap(const perfdata::MmapEvent& e) {
  if (is_guest_cpumode(e.misc)) return;  // guests are not modelled
  if (is_kernel_cpumode(e.misc) || e.pid == -1) {
    on_kernel_map(e.addr, e.len, e.pgoff, e.filename, {});
    return;
  }
  Thread& t = findnew_thread(e.pid, e.tid);
  if (!t.maps_) return;
  Map m;
  m.start = e.addr;
  m.end = end_of(e.addr, e.len);
  m.pgoff = is_vdso(e.filename) ? 0 : e.pgoff;
  // MMAP carries no protection: perf takes executable unless it is a data map.
  m.prot = (e.misc & perfdata::kMiscMmapData) ? 0 : 4;
  m.dso = user_dso(m, t, e.filename, {});
  insert_map(*t.maps_, m);
}

void Machine::on_mmap2(const perfdata::Mmap2Event& e) {
  if (is_guest_cpumode(e.misc)) return;
  BuildId bid;
  if (e.misc & perfdata::kMiscMmapBuildId) bid = to_build_id(e.build_id);
  if (is_kernel_cpumode(e.misc) || e.pid == -1) {
    on_kernel_map(e.addr, e.len, e.pgoff, e.filename, bid);
    return;
  }
  Thread& t = findnew_thread(e.pid, e.tid);
  if (!t.maps_) return;
  Map m;
  m.start = e.addr;
  m.end = end_of(e.addr, e.len);
  m.pgoff = is_vdso(e.filename) ? 0 : e.pgoff;
  m.prot = e.prot;
  m.flags = e.flags;
  if (!(e.misc & perfdata::kMiscMmapBuildId)) {
    m.maj = e.maj;
    m.min = e.min;
    m.ino = e.ino;
    m.ino_generation = e.ino_generation;
  }
  m.dso = user_dso(m, t, e.filename, bid);
  insert_map(*t.maps_, m);
}

void Machine::on_ksymbol(const perfdata::KsymbolEvent& e) {
  constexpr uint16_t kUnregister = 1;
  const Map* found = kernel_.find(e.addr);
  if (e.flags & kUnregister) {
    // perf drops the program's map, never the kernel image's.
    if (found && found->dso && *found->dso->name != kKernelDsoName) {
      size_t i = static_cast<size_t>(found - kernel_.maps_.data());
      kernel_.maps_.erase(kernel_.maps_.begin() + static_cast<ptrdiff_t>(i));
      kernel_.touch();
      --total_maps_;
    }
    return;
  }
  if (found) return;  // perf adds the symbol to the DSO already mapped there
  if (e.len == 0) return;
  Map m;
  m.start = e.addr;
  m.end = end_of(e.addr, e.len);
  m.pgoff = 0;
  m.prot = 5;
  m.dso = dsos_.intern(e.name, {}, true);
  insert_map(kernel_, m);
}

void Machine::process(const perfdata::Reader& reader, const perfdata::Record& rec, uint64_t time) {
  using namespace perfdata;
  auto trailer = [&]() -> unsigned {
    const EventAttr* ea = reader.attr_of(rec);
    return ea ? sample_id_trailer_size(ea->attr) : 0;
  };
  bool swap = reader.swapped();
  uint64_t off = rec.offset + 8;
  switch (rec.type) {
    case kRecordComm:
      on_comm(decode_comm(rec.body(), rec.misc, trailer(), swap, off), time);
      break;
    case kRecordFork:
      on_fork(decode_task(rec.body(), rec.misc, swap, off));
      break;
    case kRecordExit:
      on_exit(decode_task(rec.body(), rec.misc, swap, off));
      break;
    case kRecordMmap:
      on_mmap(decode_mmap(rec.body(), rec.misc, trailer(), swap, off));
      break;
    case kRecordMmap2:
      on_mmap2(decode_mmap2(rec.body(), rec.misc, trailer(), swap, off));
      break;
    case kRecordKsymbol:
      on_ksymbol(decode_ksymbol(rec.body(), rec.misc, trailer(), swap, off));
      break;
    case kRecordHeaderBuildId: {
      // A pipe's build id (perf inject writes them in front of the samples): the DSO it names
      // gets it before anything is resolved in it, as a file's BUILD_ID section does.
      Features one;
      one.parse(kFeatBuildId, rec.bytes, swap, rec.offset);
      dsos_.apply_build_ids(one.build_ids);
      break;
    }
    default:
      break;
  }
}

const Map* Machine::find_map(const Thread* thread, uint8_t cpumode, uint64_t addr) const {
  switch (cpumode & kMiscCpumodeMask) {
    case perfdata::kMiscKernel:
      return kernel_.find(addr);
    case perfdata::kMiscUser:
      return thread && thread->maps_ ? thread->maps_->find(addr) : nullptr;
    default:
      return nullptr;  // hypervisor, guests, unknown: perf finds no map either
  }
}

std::vector<const Thread*> Machine::threads() const {
  std::vector<const Thread*> out;
  out.reserve(threads_.size());
  for (const auto& [tid, t] : threads_) out.push_back(t.get());
  std::sort(out.begin(), out.end(), [](const Thread* a, const Thread* b) { return a->tid() < b->tid(); });
  return out;
}

Machine::MemStats Machine::mem_stats() const {
  MemStats s = stats_;
  s.threads = threads_.size();
  s.threads_exited = 0;
  // Hash nodes: the value, the next pointer and the cached hash.
  constexpr size_t kNode = 2 * sizeof(void*);
  size_t bytes = sizeof(*this);
  bytes += threads_.bucket_count() * sizeof(void*);
  for (const auto& [tid, t] : threads_) {
    if (t->exited_) ++s.threads_exited;
    bytes += kNode + sizeof(std::pair<const int32_t, std::unique_ptr<Thread>>) + sizeof(Thread) +
             t->comms_.capacity() * sizeof(Thread::Comm);
  }
  s.address_spaces = processes_.size() + detached_.size();
  bytes += processes_.bucket_count() * sizeof(void*) + detached_.capacity() * sizeof(void*);
  auto space_bytes = [](const AddressSpace& a) { return a.maps_.capacity() * sizeof(Map); };
  for (const auto& [pid, p] : processes_) {
    bytes += kNode + sizeof(std::pair<const int32_t, std::unique_ptr<Process>>) + sizeof(Process) + space_bytes(p->space);
  }
  for (const auto& p : detached_) bytes += sizeof(Process) + space_bytes(p->space);
  bytes += space_bytes(kernel_);
  s.maps = total_maps_;
  s.dsos = dsos_.size();
  bytes += dsos_.size() * (sizeof(Dso) + sizeof(void*) + sizeof(uint32_t) + kNode + sizeof(std::string_view) + 8);
  s.strings = strings_.size();
  s.string_bytes = strings_.bytes();
  // Each pooled string: its node and std::string, plus the heap buffer when it is not inline.
  bytes += strings_.size() * (kNode + sizeof(std::string) + sizeof(void*)) + strings_.bytes();
  bytes += exited_.size() * sizeof(std::pair<uint64_t, int32_t>);
  s.approx_bytes = bytes;
  return s;
}

}  // namespace tperf::session
