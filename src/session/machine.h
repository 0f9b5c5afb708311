// The model of the profiled machine built from the event stream: threads (hash map by tid), one
// address space per process shared by its threads, maps in sorted arrays, DSOs interned once.
// Nothing is reference-counted: the Machine owns everything; other code holds plain pointers
// that stay valid until the documented retire step (exited threads) or for the Machine's life
// (DSOs, strings).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "perfdata/reader.h"
#include "perfdata/records.h"
#include "util/build_id.h"

namespace tperf::session {

// Interned immutable strings (comms, DSO names): stable pointers for the pool's life.
class StringPool {
 public:
  const std::string* intern(std::string_view s);
  size_t size() const { return strings_.size(); }
  size_t bytes() const { return bytes_; }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  std::unordered_set<std::string, Hash, std::equal_to<>> strings_;
  size_t bytes_ = 0;
};

using BuildId = util::BuildId;

// A file (or pseudo file: [kernel.kallsyms], [vdso], //anon, a JIT map) mapped somewhere.
// Interned once by name + build id; never freed before the Machine. symbols/ hangs its caches
// off `symbols` (opaque here so that session/ does not depend on symbols/).
struct Dso {
  uint32_t id = 0;
  const std::string* name = nullptr;
  BuildId build_id;
  bool kernel = false;  // the kernel image or a module
  // Named by the file's BUILD_ID feature (DsoTable::apply_build_ids), which perf record fills
  // with the DSOs its samples hit (unless told --buildid-all).
  bool listed = false;
  // The process of the first map of this file: perf looks for the file in that process's mount
  // namespace (a container's root) while the process lives. -1 for kernel and pseudo DSOs.
  int32_t first_pid = -1;
  mutable void* symbols = nullptr;
  // Interned by DsoTable; see short_name().
  const std::string* short_name_str = nullptr;
  // The short name perf prints in some columns: the basename for files, "[module]" for a kernel
  // module's path (what perf script prints for module frames), "[JIT] tid N" for
  // /tmp/perf-N.map, the name itself for pseudo files ([kernel.kallsyms], [vdso], bpf_prog_...).
  std::string_view short_name() const;
};

class DsoTable {
 public:
  explicit DsoTable(StringPool& strings) : strings_(strings) {}
  // The DSO for name + build id; an empty build id matches a DSO of that name with or without
  // one (a later build id fills it in).
  Dso* intern(std::string_view name, const BuildId& build_id, bool kernel);
  Dso* find(std::string_view name) const;
  // Attaches build ids from the BUILD_ID feature (matched by name).
  void apply_build_ids(const std::vector<perfdata::BuildIdEntry>& entries);
  size_t size() const { return dsos_.size(); }
  const std::vector<std::unique_ptr<Dso>>& all() const { return dsos_; }

 private:
  Dso* create(std::string_view name, const BuildId& build_id, bool kernel);

  StringPool& strings_;
  std::vector<std::unique_ptr<Dso>> dsos_;               // by id
  std::unordered_map<std::string_view, uint32_t> by_name_;  // the first DSO of each name (views of pool strings)
  std::vector<uint32_t> next_same_name_;                  // by id: the next DSO of that name, or kNone
  static constexpr uint32_t kNone = UINT32_MAX;
};

struct Map {
  uint64_t start = 0;  // [start, end)
  uint64_t end = 0;
  uint64_t pgoff = 0;
  Dso* dso = nullptr;
  uint32_t prot = 0;
  uint32_t flags = 0;
  uint32_t maj = 0, min = 0;
  uint64_t ino = 0, ino_generation = 0;
  // Anonymous or file-less memory (//anon, /dev/zero, /anon_hugepage, [stack], [heap], /SYSV):
  // addresses in it are used as they are. Its executable parts get the DSO perf gives them, the
  // JIT symbol file "/tmp/perf-PID.map".
  bool identity = false;
  // The address as an offset into the mapped file (perf's map__map_ip); the address itself for
  // identity maps. Not meaningful for kernel maps (perf uses kernel addresses as they are; the
  // kernel image map's pgoff is the address of its reference symbol, "_text" in
  // "[kernel.kallsyms]_text", needed for KASLR with a vmlinux).
  uint64_t map_ip(uint64_t addr) const { return identity ? addr : addr - start + pgoff; }
  bool contains(uint64_t addr) const { return addr >= start && addr < end; }
};

// The maps of one process (or of the kernel), sorted by start, never overlapping: a new map cuts
// or replaces the parts of older maps it covers. Lookup is a binary search. A Map pointer from
// find() or maps() is valid until this space changes (the next insert, exec, or its release).
class AddressSpace {
 public:
  void insert(const Map& map);
  const Map* find(uint64_t addr) const;
  const std::vector<Map>& maps() const { return maps_; }
  size_t size() const { return maps_.size(); }
  void clear() {
    maps_.clear();
    touch();
  }
  // Unique over every address space of the process's lifetime and renewed by each change of its
  // maps: a cache keyed by (version, address) never sees a stale map, even when a freed space's
  // memory is reused by a new one.
  uint64_t version() const { return version_; }
  // Renews the version (the maps changed, or what is derived from them did).
  void touch() { version_ = next_version(); }

 private:
  friend class Machine;
  static uint64_t next_version();
  std::vector<Map> maps_;
  uint64_t version_ = next_version();
};

class Thread {
 public:
  struct Comm {
    uint64_t time;  // valid from this time on
    const std::string* comm;
    bool exec;
  };

  int32_t pid() const { return pid_; }
  int32_t tid() const { return tid_; }
  int32_t ppid() const { return ppid_; }
  // The newest comm, or nullptr when none was seen (perf then prints ":<tid>").
  const std::string* comm() const { return comms_.empty() ? nullptr : comms_.back().comm; }
  // The comm valid at `time`: the newest one set at or before it (the first one for earlier times).
  const std::string* comm_at(uint64_t time) const;
  const std::vector<Comm>& comms() const { return comms_; }
  AddressSpace* maps() const { return maps_; }
  bool exited() const { return exited_; }
  uint64_t exit_time() const { return exit_time_; }
  uint64_t start_time() const { return start_time_; }

  // Makes `out` this thread as it is now, with `maps` (a copy of maps() taken now, or nullptr)
  // for its address space: for a reader on another thread that works on samples held while the
  // machine goes on changing the thread, its process and its maps.
  void copy_to(Thread& out, AddressSpace* maps) const;

 private:
  friend class Machine;
  int32_t pid_ = -1, tid_ = -1, ppid_ = -1;
  std::vector<Comm> comms_;
  AddressSpace* maps_ = nullptr;  // owned by the Machine's process table
  bool exited_ = false;
  uint64_t exit_time_ = 0;
  uint64_t start_time_ = 0;
};

class Machine {
 public:
  struct Options {
    // Keep exited threads for the whole session (task listings, off-CPU analysis). Otherwise
    // they are released by retire_exited() once events have moved past their exit.
    bool keep_exited = false;
    // With keep_exited: retire_exited() still gives up an exited thread's address space (its
    // process's maps, once no live thread shares them) when events have moved past its exit, and
    // keeps the thread itself (its comms, its place in a task listing). A report needs the comms
    // of every thread it counted, never the maps of a process that ended long before: on a
    // system-wide recording of compiler runs these were 630k maps, 64 MB of 145.
    bool drop_exited_maps = false;
    // perf 6.1 keeps a process's maps across exec (new maps only cut the old ones they overlap);
    // by default tperf empties the address space at an exec COMM, which is what the kernel did.
    bool keep_maps_on_exec = false;
    // How long (in sample time) an exited thread is kept for samples stamped after its EXIT
    // record; a real task's last samples follow its EXIT by microseconds to milliseconds.
    uint64_t exit_grace_ns = 1000000000;
  };

  struct MemStats {
    size_t threads = 0, threads_exited = 0, threads_peak = 0, threads_released = 0;
    size_t address_spaces = 0, address_spaces_peak = 0;
    size_t maps = 0, maps_peak = 0;
    size_t dsos = 0;
    size_t strings = 0, string_bytes = 0;
    size_t approx_bytes = 0;  // memory held by the model (containers counted by capacity)
  };

  Machine();
  explicit Machine(Options options);
  ~Machine();
  Machine(const Machine&) = delete;
  Machine& operator=(const Machine&) = delete;

  // Applies a side-band record (COMM, FORK, EXIT, MMAP, MMAP2, KSYMBOL) delivered in time
  // order; `time` is its timestamp (0 when it has none). Other records are ignored. Throws
  // FormatError (with the offset) when the record's body is malformed; the model is unchanged.
  void process(const perfdata::Reader& reader, const perfdata::Record& rec, uint64_t time);

  void on_comm(const perfdata::CommEvent& e, uint64_t time);
  void on_fork(const perfdata::TaskEvent& e);
  void on_exit(const perfdata::TaskEvent& e);
  void on_mmap(const perfdata::MmapEvent& e);
  void on_mmap2(const perfdata::Mmap2Event& e);
  void on_ksymbol(const perfdata::KsymbolEvent& e);

  // The thread, or nullptr. An exited thread is found until it is released.
  Thread* find_thread(int32_t tid) const;
  // The thread, created (with its process) when unknown, as perf does for samples of tasks
  // that had no COMM/FORK. Like perf, a new non-leader thread of an unknown process also creates
  // the process's leader thread (pid, pid).
  Thread& findnew_thread(int32_t pid, int32_t tid);

  // The map for an address in the given cpumode (perf_event_header.misc & 7): kernel modes look
  // in the kernel's maps, user modes in the thread's process.
  const Map* find_map(const Thread* thread, uint8_t cpumode, uint64_t addr) const;

  // Releases exited threads whose exit is more than exit_grace_ns older than `time` (events are
  // delivered in time order) and processes left without threads. With keep_exited only their
  // address spaces go (drop_exited_maps), or nothing.
  void retire_exited(uint64_t time);
  // Whether some exited thread is still to be released by retire_exited(): until then a Thread
  // pointer held across a FINISHED_ROUND stays valid.
  bool exits_pending() const { return !exited_.empty(); }

  AddressSpace& kernel_maps() { return kernel_; }
  const AddressSpace& kernel_maps() const { return kernel_; }
  DsoTable& dsos() { return dsos_; }
  const DsoTable& dsos() const { return dsos_; }
  StringPool& strings() { return strings_; }

  // Every thread still held, sorted by tid (perf report --tasks order).
  std::vector<const Thread*> threads() const;
  MemStats mem_stats() const;

 private:
  struct Process;
  Process& process_of(int32_t pid);
  Process& fresh_process(int32_t pid);
  Process* process_holding(const Thread& t) const;
  void join(Thread& t, Process& p);
  void leave(Thread& t);
  Thread& new_thread(int32_t pid, int32_t tid, int32_t ppid, uint64_t time);
  void release_thread(int32_t tid);
  void insert_map(AddressSpace& space, const Map& map);
  Dso* user_dso(Map& map, const Thread& t, const std::string& filename, const BuildId& bid);
  void clear_space(AddressSpace& space);
  void on_kernel_map(uint64_t start, uint64_t len, uint64_t pgoff, const std::string& name, const BuildId& bid);
  void set_comm(Thread& t, std::string_view comm, uint64_t time, bool exec);

  Options options_;
  StringPool strings_;
  DsoTable dsos_;
  AddressSpace kernel_;
  std::unordered_map<int32_t, std::unique_ptr<Thread>> threads_;
  Thread* last_found_ = nullptr;  // findnew_thread()'s last answer, while it is in threads_
  std::unordered_map<int32_t, std::unique_ptr<Process>> processes_;  // the current process of each pid
  // Processes replaced by a new one of the same pid (pid reuse) while threads of theirs were
  // still held; freed with their last thread.
  std::vector<std::unique_ptr<Process>> detached_;
  size_t total_maps_ = 0;  // over every address space, the kernel's included
  std::deque<std::pair<uint64_t, int32_t>> exited_;  // (exit time, tid), oldest first
  mutable MemStats stats_;
};

}  // namespace tperf::session
