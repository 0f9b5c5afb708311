// The one entry point for turning addresses into what perf shows: symbol names (ELF .symtab/
// .dynsym, PLT entries, kallsyms, BPF/KSYMBOL, perf-PID.map JIT maps, the vDSO), source lines and
// inline chains (DWARF). Everything is loaded lazily per DSO on first use, cached for the
// Symbolizer's life, and safe to query from several threads at once.
//
// Usage (what `tperf script` does):
//   symbols::Symbolizer symbolizer(machine, options);
//   const session::Map* map = machine.find_map(thread, cpumode, ip);
//   if (map) {
//     symbols::Resolved r = symbolizer.resolve(*map, thread->pid(), ip);
//     // r.sym ? r.sym->name() : "[unknown]";  r.symoff();  r.addr (perf's callchain address)
//   }
//   for (auto& w : symbolizer.take_warnings()) fmt::print(stderr, "{}\n", w);
//
// Addresses. For a user-space file perf 6.1 works in file offsets: a sample address becomes
// map.map_ip(addr) = addr - map.start + map.pgoff, and ELF symbol values are moved into the same
// space through the PT_LOAD segment holding them (st_value - p_vaddr + p_offset). Resolved::addr
// is that offset; perf prints it for user-space callchain frames and counts symoff from it.
// Kernel, module, BPF and JIT (anonymous memory) addresses are used as they are.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "perfdata/records.h"
#include "session/machine.h"
#include "symbols/kallsyms.h"
#include "symbols/symbol_table.h"

namespace tperf::util {
class WorkQueue;
}

namespace tperf::symbols {

struct SourceFrame;

class DwarfLines;

struct SymbolizerOptions {
  // Root of the recording machine's files (perf --symfs): every DSO path is looked up under it.
  std::string symfs;
  // A kallsyms file to use for the kernel (perf --kallsyms); "" = perf's choice: /proc/kallsyms
  // when the recording's kernel build id is the running kernel's (or unknown), else the copy in
  // the build-id cache (~/.debug/[kernel.kallsyms]/<build id>/kallsyms).
  std::string kallsyms;
  // perf's build-id cache; "" = $HOME/.debug.
  std::string buildid_dir;
  // Demangle C++/Rust/OCaml names of user-space symbols (perf's default; --no-demangle turns it off).
  bool demangle = true;
  // Demangle kernel symbols too (perf --demangle-kernel).
  bool demangle_kernel = false;
  // Read the vDSO of this process when the recording's [vdso] is not in the build-id cache and
  // this kernel's vDSO has the same build id (or the recording has none).
  bool use_own_vdso = true;
  // Where uncompressed copies of compressed debug files are kept for source lines and inline
  // chains (see debug_cache.h); "" = none, the files are inflated in memory every time.
  std::string debug_cache;
  // Source lines name the file by its whole path as DWARF gives it (perf --full-source-path),
  // not by its last component.
  bool full_source_path = false;
};

// What an address resolved to.
struct Resolved {
  const Symbol* sym = nullptr;  // nullptr: perf prints "[unknown]"
  uint64_t addr = 0;            // the address in the DSO's terms (see the header comment)
  uint64_t symoff() const { return sym ? addr - sym->start : 0; }
};

// One frame of an inline chain, innermost first, as perf --inline shows them.
struct InlineFrame {
  std::string function;  // demangled as perf demangles; the ELF symbol's name when DWARF names none
  std::string srcline;   // "file.c:12" (basename): the address's line in the innermost frame, the
                         // call's line in each outer one; "??:0" when addr2line knows none
  bool inlined = true;   // false for the real function the chain ends in (perf then prints the dso)
};

class Symbolizer {
 public:
  explicit Symbolizer(const session::Machine& machine, SymbolizerOptions options = {});
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // The symbol at `addr` in `map` (found by Machine::find_map for that address). `pid`: the
  // process the address belongs to (names the JIT map of anonymous executable memory); -1 for
  // kernel maps. Thread-safe; the Symbol stays valid for the Symbolizer's life.
  Resolved resolve(const session::Map& map, int32_t pid, uint64_t addr);

  // Why `map` gives no symbols, or only some: "" when its DSO has a full symbol table, else a
  // short reason ("file not found", "build-id mismatch: ...", "stripped: only its dynamic
  // symbols ..."). Loads the DSO if needed.
  std::string symbol_problem(const session::Map& map, int32_t pid);

  // perf's srcline for `addr` (perf script -F srcline): "file.c:12" from DWARF; "" when the file
  // has no line for it (addr2line's "??:0", which perf does not print); perf's fallback
  // "<dso short name>[<hex address>]" for pseudo DSOs (kernel, [vdso], JIT) and unreadable files.
  // Thread-safe; cached per DSO.
  std::string srcline(const session::Map& map, int32_t pid, uint64_t addr);
  // The source position of `addr` as perf's srccode field looks it up (get_srcline_split, the
  // address in objdump terms as for srcline): the file as DWARF names it (full path) and its
  // line. False for pseudo DSOs, files without DWARF and addresses DWARF has no line for.
  // Thread-safe; cached per DSO.
  bool source_position(const session::Map& map, int32_t pid, uint64_t addr, std::string* file, unsigned* line);
  // perf report's srcline sort key for `ip` (perf 6.1's get_srcline with the symbol): "file.c:12";
  // "??:0" when the file has no line for it but names its function; else "sym+OFFSET" (decimal)
  // or "dso[hexaddr]". `frame`: a callchain entry (children mode), whose raw address perf 6.1
  // treats as map-relative, so it never finds a line for one in a mapped file.
  // `with_name`: false for the text perf shows after a frame's symbol in chains keyed by address
  // (its callchain_srcline: the address taken as map-relative, "+OFFSET" without the name).
  // `plain_unknown`: "" where perf's fallbacks above would come (callchain_srcline for chains
  // keyed by srcline asks for no address; perf 6.1 then has no text at all).
  std::string report_srcline(const session::Map& map, int32_t pid, uint64_t ip, bool frame, bool with_name = true,
                             bool plain_unknown = false);

  // The inline chain at `addr` as perf --inline expands a callchain frame: empty when perf shows
  // the frame as it is (no symbol, no DWARF); otherwise the frames that replace it (one, the
  // frame's own function, where DWARF has nothing for the address). Thread-safe.
  std::vector<InlineFrame> inline_frames(const session::Map& map, int32_t pid, uint64_t addr);
  // The same chain as symbols, as perf report's callchains take it (--call-graph dwarf frames):
  // the frame's own symbol where DWARF names it, an `inlined` symbol with its range for each
  // other function. Empty when the frame stays as it is. The chain and its symbols, cached per
  // address, live as long as this Symbolizer. Thread-safe.
  std::span<const Symbol* const> inline_symbols(const session::Map& map, int32_t pid, uint64_t addr);

  // Loads the symbols of these DSOs now, in parallel on `queue` (instead of on first use).
  void preload(const std::vector<const session::Dso*>& dsos, util::WorkQueue& queue);
  // Queues the loading of these DSOs' symbols on `queue`'s workers and returns at once: the
  // caller goes on (reading the file) while they load; a lookup of a DSO still loading waits
  // for it. The queue must be flushed (or destroyed) before the Symbolizer.
  void preload_async(const std::vector<const session::Dso*>& dsos, util::WorkQueue& queue);
  // The same, before any process mapped these DSOs (the files the recording's build-id table
  // names, loaded while the kernel's symbols are read at the start of a replay): each is looked
  // for outside any container, and the warnings its load has are held. Kernel DSOs are skipped.
  // The DSOs' names and build ids must not change meanwhile (listed ones do not).
  void preload_ahead(const std::vector<const session::Dso*>& dsos, util::WorkQueue& queue);
  // Call on the machine's thread once a map of `dso` was applied (its first_pid is known),
  // before any of its addresses is looked up: a DSO loaded ahead is kept if its first process
  // sees the files this one sees (its held warnings are then given), else loaded again inside
  // that process's mount namespace, as its first map would have loaded it. Waits for a load
  // still under way.
  void confirm_ahead(const session::Dso& dso);

  // perf widens the kernel map to its kallsyms symbols once they are loaded (map__fixup_start/
  // end), so kernel addresses past the recorded map (.init.text, data) still resolve to
  // [kernel.kallsyms]. The widened map when `addr` falls in it and the Machine has no map for
  // it, else nullptr. Valid for the Symbolizer's life.
  const session::Map* widened_kernel_map(uint64_t addr);

  // Where resolve() finds the symbol of `addr` in `map` when that is a plain search of a table
  // that no longer changes (a file's symbols, a JIT map's, the kernel's while no KSYMBOL added any):
  // the table, `*addr` then in its terms; nullptr when resolve() must answer (a BPF program, the
  // kernel with KSYMBOL symbols, no table). What a caller caches per (table, address) stays true.
  const SymbolTable* fixed_table(const session::Map& map, int32_t pid, uint64_t* addr);

  // A symbol a KSYMBOL record placed inside an existing kernel map (perf adds it to that DSO).
  void add_kernel_symbol(uint64_t addr, uint64_t len, std::string_view name);
  // Call before the Machine applies a KSYMBOL record: a program registered inside the kernel
  // image's map becomes one of its symbols (add_kernel_symbol), as perf does.
  void on_ksymbol(const perfdata::KsymbolEvent& e);

  // Begins reading the running kernel's symbols (/proc/kallsyms) on threads of their own, for a
  // recording with kernel samples, when nothing in the options points elsewhere: the 60-90 ms it
  // takes then overlap the work before the first kernel frame instead of holding it up.
  // The first lookup of a kernel symbol takes them if /proc/kallsyms is the file to read then; a
  // recording of another kernel (by its build id) reads its kallsyms from the build-id cache
  // instead, and none begins for it. Call on the machine's thread (it reads the kernel's DSO);
  // once a kernel symbol was looked up it does nothing.
  void read_kernel_symbols_early();
  // Whether an early read began (it may have been taken by a lookup since).
  bool kernel_symbols_read_early() const {
    std::lock_guard lock(early_mu_);
    return early_began_;
  }

  // Whether the first lookup of a kernel address may still read the machine's DSO table and
  // kernel maps (to pick the kernel's symbol file): until the machine's thread took that
  // reference (preload of a kernel DSO) or a lookup read it. While it may, another thread that
  // looks addresses up must not run while the machine applies records. Call on the machine's
  // thread.
  bool kernel_lookup_reads_machine() const {
    return !kernel_ref_ && !kernel_ref_read_.load(std::memory_order_acquire);
  }

  // One-line messages for the user (a DSO whose build id matched no file, kernel symbols that
  // could not be read and why), each given once, sorted; the caller prints them to stderr.
  std::vector<std::string> take_warnings();

  // Bytes held by symbol tables and caches (approximate), for stats.
  size_t memory_bytes() const;

 private:
  struct DsoState;
  // `ahead`: as preload_ahead() loads it, when this call is the one that loads it.
  DsoState& state_of(const session::Dso& dso, bool ahead = false);
  std::atomic<DsoState*>& slot_of(const session::Dso& dso);  // the DSO's state slot (its chunk made)
  DsoState& jit_state(int32_t pid);
  DsoState* state_for_map(const session::Map& map, int32_t pid, uint64_t* addr);
  // The DSO's DWARF reader, opened on first use; nullptr when the file cannot be read. Call with
  // the DSO's dwarf_mu held.
  DwarfLines* dwarf_of(DsoState& st) const;
  // The srcline of an ELF DSO's objdump address, cached: "file.c:12", ":0", "" (no line), or
  // "<short_name>[<addr>]" when the file has no readable DWARF (*have_dwarf false then).
  // A source file as srclines name it: its last component, or with full_source_path its whole
  // path as addr2line prints it.
  std::string_view source_file(const SourceFrame& frame) const;
  std::string cached_srcline(DsoState& st, std::string_view short_name, uint64_t objdump,
                                    bool* have_dwarf = nullptr);
  void load(DsoState& state, const session::Dso& dso, bool ahead);
  void load_elf(DsoState& state, const session::Dso& dso, bool ahead);
  void load_kernel(DsoState& state, const session::Dso& dso);
  void load_kallsyms_once();
  void warn(std::string message);
  // What loading kallsyms needs from the machine: the kernel image's DSO (its build id decides
  // whether /proc/kallsyms describes it) and where "_text" was when recording (its map's pgoff).
  // Read on the thread that feeds the machine: preload_async() takes it before it queues a
  // kernel DSO, since a worker reading the DSO table or the kernel maps would race with new
  // records going in (it crashed once in DsoTable::find while an MMAP added a DSO).
  struct KernelRef {
    const session::Dso* dso = nullptr;
    uint64_t text_addr = 0;
  };
  KernelRef kernel_ref() const;
  // Whether the recording's kernel DSO has a build id that is not the running kernel's (its
  // kallsyms then come from the build-id cache, not /proc/kallsyms).
  static bool of_another_kernel(const session::Dso* kdso);
  void note_kernel_ref(const std::vector<const session::Dso*>& dsos);

  const session::Machine& machine_;
  SymbolizerOptions options_;

  // DSO states by Dso::id in chunks that never move, so lookups take no lock.
  static constexpr size_t kChunkBits = 10;
  static constexpr size_t kChunkSize = size_t{1} << kChunkBits;
  static constexpr size_t kMaxChunks = 1 << 12;
  struct Chunk;
  std::unique_ptr<std::array<std::atomic<Chunk*>, kMaxChunks>> chunks_;
  std::mutex chunk_mu_;
  std::mutex replaced_mu_;
  std::vector<std::unique_ptr<DsoState>> replaced_;  // confirm_ahead()'s, kept for the Symbolizer's life

  std::mutex jit_mu_;
  std::unordered_map<int32_t, std::unique_ptr<DsoState>> jit_;

  // Kernel symbols, parsed once for the kernel image and every module.
  std::once_flag kallsyms_once_;
  std::optional<KernelRef> kernel_ref_;  // taken by note_kernel_ref() for the workers
  std::atomic<bool> kernel_ref_read_{false};  // load_kallsyms_once() has read what it needs
  struct KernelData;
  std::unique_ptr<KernelData> kernel_;
  mutable std::mutex early_mu_;  // guards the three below: the early read may start on another thread
  std::unique_ptr<KallsymsRead> early_kallsyms_;  // read_kernel_symbols_early()
  bool early_began_ = false;
  bool early_taken_ = false;  // load_kallsyms_once() came: no early read any more

  std::mutex widened_mu_;
  std::unique_ptr<session::Map> widened_;

  std::shared_mutex ksymbol_mu_;
  SymbolTable ksymbols_;  // KSYMBOL symbols inside the kernel map
  // Whether ksymbols_ has any: read without the lock by every kernel frame's lookup, which takes
  // the lock only once there are some (most files have none; the lock was 1.5% of report's time
  // on the sys recipe, half of whose frames are the kernel's).
  std::atomic<bool> any_ksymbols_{false};

  mutable std::mutex warn_mu_;
  std::vector<std::string> warnings_;
};

}  // namespace tperf::symbols
