#include "symbols/symbolizer.h"

#include <algorithm>
#include <filesystem>

#include <elf.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <deque>
#include <fstream>
#include <sstream>
#include <utility>

#include <fmt/format.h>

#include "symbols/debug_cache.h"
#include "symbols/debug_lookup.h"
#include "symbols/demangle.h"
#include "symbols/dwarf_lines.h"
#include "symbols/elf_file.h"
#include "symbols/elf_symbols.h"
#include "symbols/jit_map.h"
#include "symbols/kallsyms.h"
#include "util/file_buffer.h"
#include "util/workqueue.h"

namespace tperf::symbols {

namespace {

constexpr char kKernelDsoName[] = "[kernel.kallsyms]";

// perf's anonymous memory (is_anon_memory) and file-less memory (is_no_dso_memory): addresses are
// used as they are, and executable ones take their symbols from the process's JIT map.
bool is_anon_name(std::string_view n) {
  return n == "//anon" || n.starts_with("/dev/zero") || n.starts_with("/anon_hugepage");
}
bool is_no_dso_name(std::string_view n) { return n.starts_with("[stack") || n.starts_with("/SYSV") || n == "[heap]"; }
// The name the machine gives executable anonymous memory: symbols come from the JIT map, by pid.
bool is_jit_map_name(std::string_view n) { return n.starts_with("/tmp/perf-") && n.ends_with(".map"); }

std::string_view basename_of(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::optional<std::string> read_whole_file(const std::string& path) {
  auto buf = util::FileBuffer::read(path);
  if (!buf) return std::nullopt;
  return std::string(buf->view());
}

// This process's vDSO image (the kernel maps the same one into every process).
std::vector<uint8_t> own_vdso_image() {
  auto base = reinterpret_cast<const uint8_t*>(getauxval(AT_SYSINFO_EHDR));
  if (!base) return {};
  Elf64_Ehdr eh;
  std::memcpy(&eh, base, sizeof(eh));
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64) return {};
  size_t size = eh.e_shoff + size_t{eh.e_shnum} * eh.e_shentsize;
  // Bound by the vDSO's mapping size (a few pages) to never read past it.
  if (size == 0 || size > (1u << 20)) return {};
  std::vector<uint8_t> image(size);
  std::memcpy(image.data(), base, size);
  return image;
}

}  // namespace

struct Symbolizer::DsoState {
  enum class Kind { kNone, kElf, kKernel, kModule, kBpf, kJit };
  std::once_flag once;
  Kind kind = Kind::kNone;
  SymbolTable table;
  const SymbolTable* shared = nullptr;  // kernel/module tables owned by KernelData
  std::string dwarf_path;               // file for source lines (perf's dso__name); "" = none
  uint64_t text_offset = 0;             // .text sh_addr - sh_offset: file offset -> objdump address
  std::string short_name;               // for perf's srcline fallback
  bool exec_type = false;               // ET_EXEC: perf 6.1 keeps its symbols as file offsets
  // Code where addr2line names no function (code_without_symbols of the source-line file).
  std::vector<std::pair<uint64_t, uint64_t>> unnamed_code;
  // The files addr2line names from the source-line file's symbol table (none: no file symbols).
  std::unique_ptr<SymbolFiles> symbol_files;
  std::string problem;                  // why the DSO gave no symbols ("" = it gave some)
  // Loaded ahead (preload_ahead()), before a process mapped the DSO, and not confirmed yet: its
  // file was looked for outside any container, and the warnings the load had wait here until
  // confirm_ahead() finds that right (none is given for a DSO never mapped).
  bool ahead = false;
  std::vector<std::string> held_warnings;
  std::mutex bpf_mu;                    // the lazily made symbol of a BPF program DSO

  std::mutex dwarf_mu;
  bool dwarf_tried = false;
  std::unique_ptr<DwarfLines> dwarf;
  std::unordered_map<uint64_t, std::string> srclines;
  // source_position()'s answers by objdump address: the file ("" for none) and line.
  std::unordered_map<uint64_t, std::pair<std::string, unsigned>> positions;
  struct Chain {
    bool found = false;
    std::vector<SourceFrame> frames;
  };
  std::unordered_map<uint64_t, Chain> chains;
  // inline_symbols(): the chains as symbols, and the inline symbols made for them (one per
  // name and containing symbol), under dwarf_mu.
  std::unordered_map<uint64_t, std::vector<const Symbol*>> inline_chains;
  std::unordered_map<std::string, const Symbol*> inline_syms_by_key;
  std::deque<Symbol> inline_syms;
  std::deque<std::string> inline_names;

  const SymbolTable& symbols() const { return shared ? *shared : table; }
  // addr2line's line for an address no DWARF line covers, from the symbol table alone: "file:0"
  // for a local function after an STT_FILE symbol (see SymbolFiles), "" for none.
  std::string symbol_file_line(uint64_t objdump) const {
    const std::string_view file = symbol_files ? symbol_files->file_at(objdump) : std::string_view();
    return file.empty() ? std::string() : fmt::format("{}:0", file);
  }
  // Whether addr2line answers "??" for the function at this objdump address.
  bool addr2line_unnamed(uint64_t objdump) const {
    return std::any_of(unnamed_code.begin(), unnamed_code.end(),
                       [&](const auto& r) { return objdump >= r.first && objdump < r.second; });
  }
};

struct Symbolizer::Chunk {
  std::array<std::atomic<DsoState*>, kChunkSize> slots{};
  ~Chunk() {
    for (auto& s : slots) delete s.load();
  }
};

struct Symbolizer::KernelData {
  bool ok = false;
  KernelSymbols symbols;
};

Symbolizer::Symbolizer(const session::Machine& machine, SymbolizerOptions options)
    : machine_(machine),
      options_(std::move(options)),
      chunks_(std::make_unique<std::array<std::atomic<Chunk*>, kMaxChunks>>()) {}

Symbolizer::~Symbolizer() {
  for (auto& c : *chunks_) delete c.load();
}

void Symbolizer::warn(std::string message) {
  std::lock_guard lock(warn_mu_);
  warnings_.push_back(std::move(message));
}

std::vector<std::string> Symbolizer::take_warnings() {
  std::lock_guard lock(warn_mu_);
  // Sorted: symbol tables load on workers, in whatever order they finish.
  std::vector<std::string> out = std::exchange(warnings_, {});
  std::sort(out.begin(), out.end());
  return out;
}

std::atomic<Symbolizer::DsoState*>& Symbolizer::slot_of(const session::Dso& dso) {
  size_t ci = dso.id >> kChunkBits;
  if (ci >= kMaxChunks) ci = kMaxChunks - 1;  // beyond 4M DSOs they share the last chunk's slots
  auto& chunk_slot = (*chunks_)[ci];
  Chunk* chunk = chunk_slot.load(std::memory_order_acquire);
  if (!chunk) {
    std::lock_guard lock(chunk_mu_);
    chunk = chunk_slot.load(std::memory_order_acquire);
    if (!chunk) {
      chunk = new Chunk();
      chunk_slot.store(chunk, std::memory_order_release);
    }
  }
  return chunk->slots[dso.id & (kChunkSize - 1)];
}

Symbolizer::DsoState& Symbolizer::state_of(const session::Dso& dso, bool ahead) {
  auto& slot = slot_of(dso);
  DsoState* state = slot.load(std::memory_order_acquire);
  if (!state) {
    auto fresh = std::make_unique<DsoState>();
    if (slot.compare_exchange_strong(state, fresh.get(), std::memory_order_acq_rel)) state = fresh.release();
  }
  std::call_once(state->once, [&] { load(*state, dso, ahead); });
  return *state;
}

Symbolizer::DsoState& Symbolizer::jit_state(int32_t pid) {
  DsoState* state;
  {
    std::lock_guard lock(jit_mu_);
    auto& slot = jit_[pid];
    if (!slot) slot = std::make_unique<DsoState>();
    state = slot.get();
  }
  std::call_once(state->once, [&] {
    state->kind = DsoState::Kind::kJit;
    state->short_name = fmt::format("[JIT] tid {}", pid);
    // Not under --symfs: perf reads the map where the process wrote it, on this machine.
    auto text = read_whole_file(fmt::format("/tmp/perf-{}.map", pid));
    if (!text) text = read_whole_file(fmt::format("/proc/{}/root/tmp/perf-{}.map", pid, pid));
    if (text) parse_jit_map(*text, state->table);
  });
  return *state;
}

void Symbolizer::load(DsoState& state, const session::Dso& dso, bool ahead) {
  state.short_name = std::string(dso.short_name());
  if (dso.kernel) {
    load_kernel(state, dso);
  } else {
    load_elf(state, dso, ahead);
  }
}

Symbolizer::KernelRef Symbolizer::kernel_ref() const {
  KernelRef ref;
  ref.dso = machine_.dsos().find(kKernelDsoName);
  // The kernel map's pgoff holds where "_text" was when recording.
  for (const session::Map& m : machine_.kernel_maps().maps()) {
    if (m.dso && m.dso == ref.dso && m.pgoff) {
      ref.text_addr = m.pgoff;
      break;
    }
  }
  return ref;
}

void Symbolizer::note_kernel_ref(const std::vector<const session::Dso*>& dsos) {
  if (kernel_ref_) return;
  for (const session::Dso* d : dsos) {
    if (d && d->kernel) {
      kernel_ref_ = kernel_ref();
      return;
    }
  }
}

bool Symbolizer::of_another_kernel(const session::Dso* kdso) {
  if (!kdso || kdso->build_id.empty()) return false;
  const auto running = util::running_kernel_build_id();
  return !running || !(*running == kdso->build_id);
}

void Symbolizer::read_kernel_symbols_early() {
  std::lock_guard lock(early_mu_);
  // As load_kallsyms_once() picks the file when no option names one.
  if (early_taken_ || early_kallsyms_ || !options_.kallsyms.empty() || !options_.symfs.empty()) return;
  // A recording of another kernel takes its symbols from the build-id cache, if anywhere:
  // /proc/kallsyms would be read for nothing.
  if (of_another_kernel(kernel_ref().dso)) return;
  early_kallsyms_ = std::make_unique<KallsymsRead>("/proc/kallsyms", "_text");
  early_began_ = true;
}

void Symbolizer::load_kallsyms_once() {
  std::call_once(kallsyms_once_, [&] {
    // The early read, if one began; none begins from now on.
    std::unique_ptr<KallsymsRead> early;
    {
      std::lock_guard lock(early_mu_);
      early = std::move(early_kallsyms_);
      early_taken_ = true;
    }
    kernel_ = std::make_unique<KernelData>();
    std::string path = options_.kallsyms;
    // Taken for the workers before a kernel DSO was queued; else this is the machine's thread.
    const KernelRef ref = kernel_ref_ ? *kernel_ref_ : kernel_ref();
    kernel_ref_read_.store(true, std::memory_order_release);
    const session::Dso* kdso = ref.dso;
    if (path.empty() && !options_.symfs.empty()) {
      // perf takes no local kallsyms (running kernel's or build-id cache's) once a symfs root is
      // given: they describe this machine, not the recording's.
      warn("kernel symbols unavailable: --symfs is given and --kallsyms is not (no local kallsyms is used "
           "with --symfs)");
      return;
    }
    if (path.empty()) {
      path = "/proc/kallsyms";
      if (of_another_kernel(kdso)) {
        std::string cached =
            fmt::format("{}/[kernel.kallsyms]/{}/kallsyms", buildid_cache_dir({options_.symfs, options_.buildid_dir}),
                        kdso->build_id.hex());
        std::ifstream probe(cached);
        if (!probe) {
          warn(fmt::format("kernel symbols unavailable: the recording's kernel (build id {}) is not the running one "
                           "and {} does not exist",
                           kdso->build_id.hex(), cached));
          return;
        }
        path = cached;
      }
    }
    // The reference symbol: where "_text" was when recording.
    const uint64_t ref_addr = ref.text_addr;
    std::string error;
    int read_errno = 0;
    std::optional<KernelSymbols> parsed;
    if (early && early->path() == path) {
      parsed = early->finish(ref_addr, &error, &read_errno);
    } else {
      parsed = read_kallsyms(path, "_text", ref_addr, &error, &read_errno);
    }
    early.reset();
    if (read_errno) {
      warn(fmt::format("kernel symbols unavailable: cannot read {}: {}", path, std::strerror(read_errno)));
      return;
    }
    if (!parsed && error.find("kptr_restrict") != std::string::npos) {
      std::string level;
      if (auto v = read_whole_file("/proc/sys/kernel/kptr_restrict")) level = fmt::format(" (kernel.kptr_restrict = {})", std::string_view(*v).substr(0, v->find('\n')));
      error += level;
    }
    if (!parsed) {
      warn(fmt::format("kernel symbols unavailable: {}: {}", path, error));
      return;
    }
    kernel_->symbols = std::move(*parsed);
    kernel_->ok = true;
  });
}

void Symbolizer::load_kernel(DsoState& state, const session::Dso& dso) {
  std::string_view name = dso.name ? std::string_view(*dso.name) : std::string_view();
  if (name == kKernelDsoName) {
    state.kind = DsoState::Kind::kKernel;
    load_kallsyms_once();
    if (kernel_->ok) state.shared = &kernel_->symbols.kernel;
    return;
  }
  if (!name.empty() && (name.front() == '/' || name.front() == '[')) {
    state.kind = DsoState::Kind::kModule;
    load_kallsyms_once();
    std::string_view module = dso.short_name();
    if (module.size() >= 2 && module.front() == '[') module = module.substr(1, module.size() - 2);
    if (kernel_->ok) {
      auto it = kernel_->symbols.modules.find(std::string(module));
      if (it != kernel_->symbols.modules.end()) state.shared = &it->second;
    }
    return;
  }
  // A BPF program or trampoline from KSYMBOL: one symbol, its own name, over its map.
  state.kind = DsoState::Kind::kBpf;
}

void Symbolizer::load_elf(DsoState& state, const session::Dso& dso, bool ahead) {
  if (!dso.name) return;
  const std::string& name = *dso.name;
  const bool vdso = name == "[vdso]";
  if (is_anon_name(name) || is_no_dso_name(name) || is_jit_map_name(name)) return;
  if (!vdso && (name.empty() || name.front() != '/')) return;  // [vsyscall], [uprobes], ...
  state.kind = DsoState::Kind::kElf;

  DebugLookupOptions lookup{options_.symfs, options_.buildid_dir};
  // A file mapped by a process in another mount namespace (a container) is looked for inside
  // that namespace, through /proc/PID/root, while the process lives, as perf does. Loaded
  // ahead, no process mapped it yet: confirm_ahead() checks the first one's namespace.
  state.ahead = ahead;
  if (lookup.symfs.empty() && !vdso && !ahead) {
    if (std::string root = mount_namespace_root(dso.first_pid); !root.empty()) lookup.symfs = root;
  }
  // Without a recorded build id perf takes the local file's, so that the debug files named by
  // build id are found (and must then match it).
  util::BuildId build_id = dso.build_id;
  const bool recorded_build_id = !build_id.empty();
  if (build_id.empty() && !vdso) {
    if (auto local = util::read_build_id(join_symfs(lookup.symfs, name))) build_id = *local;
  }
  auto candidates = symbol_file_candidates(name, build_id, vdso, lookup);
  // perf's dso__load: the first acceptable file with a .symtab gives the symbols, the first with
  // a .dynsym is the "runtime" image whose program headers place them (often one file is both).
  std::vector<std::unique_ptr<ElfFile>> files;
  ElfFile* syms = nullptr;
  ElfFile* runtime = nullptr;
  std::string mismatch;  // what the first refused file had, for the warning
  for (const auto& c : candidates) {
    auto f = ElfFile::open(c.path);
    if (!f) continue;
    if (!build_id.empty()) {
      // perf refuses any file whose build id differs from the recording's (or that has none).
      if (!f->build_id() || !(*f->build_id() == build_id)) {
        if (mismatch.empty()) {
          mismatch = fmt::format("{} has {}", c.path,
                                 f->build_id() ? "build-id " + f->build_id()->hex() : std::string("no build-id"));
        }
        continue;
      }
    } else if (c.debuglink) {
      if (debuglink_crc32(f->image()) != c.crc) continue;
    }
    bool used = false;
    if (!syms && f->has_symtab()) syms = f.get(), used = true;
    if (!runtime && f->has_dynsym()) runtime = f.get(), used = true;
    if (used) files.push_back(std::move(f));
    if (syms && runtime) break;
  }
  // perf finds a [vdso] image only in the build-id cache, which --symfs moves under it too; the
  // running kernel's image (the same for a recording of this boot) stands in for a missing cache,
  // but not under a symfs, where perf leaves the vDSO's addresses unresolved.
  if (vdso && !syms && !runtime && options_.use_own_vdso && options_.symfs.empty()) {
    auto image = own_vdso_image();
    if (!image.empty()) {
      auto f = ElfFile::from_memory(std::move(image), "[vdso]");
      if (f && (build_id.empty() || (f->build_id() && *f->build_id() == build_id))) {
        syms = f->has_symtab() ? f.get() : nullptr;
        runtime = f.get();
        files.push_back(std::move(f));
      }
    }
  }
  // MiniDebugInfo: a stripped file may carry its .symtab xz-compressed in .gnu_debugdata (perf
  // 6.1 does not read it; newer perf does).
  if (!syms && runtime) {
    if (auto image = runtime->gnu_debugdata()) {
      auto mini = ElfFile::from_memory(std::move(*image), runtime->path());
      if (mini && mini->has_symtab()) {
        syms = mini.get();
        files.push_back(std::move(mini));
      }
    }
  }
  if (!syms && !runtime) {
    if (!mismatch.empty()) {
      state.problem = fmt::format("build-id mismatch: the recording has {}, {}", build_id.hex(), mismatch);
    } else {
      state.problem = vdso ? "no [vdso] image found" : "file not found";
    }
    std::string message;
    if (recorded_build_id && !mismatch.empty()) {
      message = fmt::format("{}: no file with build-id {} ({}); its samples show as [unknown]", name, build_id.hex(),
                            mismatch);
    } else if (recorded_build_id && !vdso) {
      message = fmt::format("{}: no file with build-id {} found; its samples show as [unknown]", name, build_id.hex());
    }
    if (ahead && !message.empty()) {
      state.held_warnings.push_back(std::move(message));
    } else if (!message.empty()) {
      warn(std::move(message));
    }
    return;
  }
  if (!syms) {
    state.problem = "stripped: only its dynamic symbols (.dynsym), no debug file found";
    syms = runtime;
  }
  if (!runtime) runtime = syms;
  const ElfFile& symfile = *syms;
  const ElfFile& runfile = *runtime;
  load_elf_symbols(symfile, runfile, options_.demangle, state.table);
  state.table.finish(SymbolTable::Fixups::kElf);
  if (!state.table.empty()) add_plt_symbols(runfile, options_.demangle, state.table);
  state.table.release_insertion_order();
  if (state.table.empty()) state.problem = "no symbol table (stripped, no debug file found)";
  GElf_Shdr text;
  if (runfile.section(".text", &text)) state.text_offset = text.sh_addr - text.sh_offset;
  state.exec_type = runfile.ehdr().e_type == ET_EXEC;
  // Source lines come from the file the symbols came from, as perf hands that to addr2line (a
  // MiniDebugInfo image carries its file's path). perf hands it no file of a DSO named in
  // brackets: "[vdso]" gets "[vdso][offset]" even when its image came from the build-id cache.
  // A --symfs given as a relative path gives relative file paths: made absolute, as the lines
  // are read later.
  const std::string& src = symfile.path();
  if (!vdso && !src.empty()) {
    std::error_code ec;
    const std::filesystem::path abs = std::filesystem::absolute(src, ec);
    state.dwarf_path = ec ? src : abs.string();
    state.unnamed_code = code_without_symbols(symfile);
    auto files = std::make_unique<SymbolFiles>(symfile);
    if (!files->empty()) state.symbol_files = std::move(files);
  }
}
Symbolizer::DsoState* Symbolizer::state_for_map(const session::Map& map, int32_t pid, uint64_t* addr) {
  const session::Dso* dso = map.dso;
  if (!dso || !dso->name) return nullptr;
  if (dso->kernel) return &state_of(*dso);
  std::string_view name = *dso->name;
  // The machine marks anonymous and file-less memory (its executable parts carry the JIT map's
  // name, /tmp/perf-PID.map, as in perf).
  if (map.identity || is_anon_name(name) || is_no_dso_name(name)) {
    constexpr uint32_t kProtExec = 4;
    if ((map.prot & kProtExec) && pid >= 0) return &jit_state(pid);
    return nullptr;
  }
  *addr = map.map_ip(*addr);
  return &state_of(*dso);
}

std::string Symbolizer::symbol_problem(const session::Map& map, int32_t pid) {
  uint64_t addr = map.start;
  DsoState* st = state_for_map(map, pid, &addr);
  if (!st) return "anonymous memory, no file";
  if (!st->problem.empty()) return st->problem;
  if (!st->symbols().empty() || st->kind == DsoState::Kind::kBpf) return "";
  switch (st->kind) {
    case DsoState::Kind::kJit: return "no JIT map (/tmp/perf-PID.map)";
    case DsoState::Kind::kKernel:
    case DsoState::Kind::kModule: return "kernel symbols unavailable";
    default: return "no symbols";
  }
}

const SymbolTable* Symbolizer::fixed_table(const session::Map& map, int32_t pid, uint64_t* addr) {
  DsoState* st = state_for_map(map, pid, addr);
  if (!st) return nullptr;
  switch (st->kind) {
    case DsoState::Kind::kBpf:
      return nullptr;
    case DsoState::Kind::kKernel: {
      if (!any_ksymbols_.load(std::memory_order_acquire)) break;
      std::shared_lock lock(ksymbol_mu_);
      if (!ksymbols_.empty()) return nullptr;
      break;
    }
    default:
      break;
  }
  return &st->symbols();
}

Resolved Symbolizer::resolve(const session::Map& map, int32_t pid, uint64_t addr) {
  Resolved r;
  r.addr = addr;
  DsoState* st = state_for_map(map, pid, &r.addr);
  if (!st) return r;
  switch (st->kind) {
    case DsoState::Kind::kBpf: {
      std::lock_guard lock(st->bpf_mu);
      if (st->table.empty()) {
        st->table.add(0, map.end - map.start, kBindGlobal, kTypeFunc, map.dso->name ? *map.dso->name : "");
        st->table.finish(SymbolTable::Fixups::kNone);
      }
      r.addr = addr - map.start;
      r.sym = st->table.find(r.addr);
      return r;
    }
    case DsoState::Kind::kKernel: {
      if (!any_ksymbols_.load(std::memory_order_acquire)) break;
      std::shared_lock lock(ksymbol_mu_);
      if (!ksymbols_.empty()) {
        if (const Symbol* s = ksymbols_.find(addr)) {
          r.sym = s;
          return r;
        }
      }
      break;
    }
    default:
      break;
  }
  r.sym = st->symbols().find(r.addr);
  return r;
}

const session::Map* Symbolizer::widened_kernel_map(uint64_t addr) {
  std::lock_guard lock(widened_mu_);
  if (!widened_) {
    const session::Map* kmap = nullptr;
    for (const session::Map& m : machine_.kernel_maps().maps()) {
      if (m.dso && m.dso->name && *m.dso->name == kKernelDsoName) {
        kmap = &m;
        break;
      }
    }
    if (!kmap) return nullptr;  // no kernel map yet: perf has nothing to widen either
    const SymbolTable& symbols = state_of(*kmap->dso).symbols();
    if (symbols.empty()) return nullptr;
    widened_ = std::make_unique<session::Map>(*kmap);
    widened_->start = std::min(kmap->start, symbols.symbols().front().start);
    widened_->end = std::max(kmap->end, symbols.symbols().back().end);
  }
  return widened_->contains(addr) ? widened_.get() : nullptr;
}

void Symbolizer::add_kernel_symbol(uint64_t addr, uint64_t len, std::string_view name) {
  std::unique_lock lock(ksymbol_mu_);
  ksymbols_.add_after_finish(addr, len, kBindGlobal, kTypeFunc, name);
  ksymbols_.merge_late_adds();
  any_ksymbols_.store(true, std::memory_order_release);
}

std::string Symbolizer::srcline(const session::Map& map, int32_t pid, uint64_t addr) {
  uint64_t rel = addr;
  DsoState* st = state_for_map(map, pid, &rel);
  std::string_view short_name = map.dso ? map.dso->short_name() : std::string_view("[unknown]");
  if (!st) return fmt::format("{}[{:x}]", short_name, rel);
  uint64_t objdump = st->kind == DsoState::Kind::kElf ? rel + st->text_offset : rel;
  if (st->kind == DsoState::Kind::kJit) short_name = st->short_name;
  // perf asks addr2line only about real files; pseudo DSOs get "<name>[<address>]".
  if (st->kind != DsoState::Kind::kElf || st->dwarf_path.empty()) return fmt::format("{}[{:x}]", short_name, objdump);
  bool have_dwarf = false;
  std::string text = cached_srcline(*st, short_name, objdump, &have_dwarf);
  if (!text.empty() || !have_dwarf) return text;
  // No line for the address. addr2line still answers "??:0" when it can name the function (the
  // nearest symbol below the address in its section), and perf prints nothing then. Below a code
  // section's first symbol (all of a PLT) the answer is "??", which perf takes for a failure: it
  // prints "<dso>[<address>]" (bash[2f3b0] for a PLT entry, liblzma.so.5.4.1[4620] before the
  // first symbol of .text).
  if (!st->addr2line_unnamed(objdump)) return text;
  return fmt::format("{}[{:x}]", short_name, objdump);
}

DwarfLines* Symbolizer::dwarf_of(DsoState& st) const {
  if (!st.dwarf_tried) {
    st.dwarf_tried = true;
    // An uncompressed copy when there is one to be had (see debug_cache.h); the file itself when
    // not, as before: the copy is a saving, never a condition.
    const UncompressedCopy copy = uncompressed_copy(st.dwarf_path, options_.debug_cache);
    st.dwarf = DwarfLines::open(copy.path.empty() ? st.dwarf_path : copy.path);
    if (!st.dwarf && !copy.path.empty()) st.dwarf = DwarfLines::open(st.dwarf_path);
  }
  return st.dwarf.get();
}

std::string_view Symbolizer::source_file(const SourceFrame& frame) const {
  return options_.full_source_path ? std::string_view(frame.addr2line_path) : basename_of(frame.file);
}

std::string Symbolizer::cached_srcline(DsoState& st, std::string_view short_name, uint64_t objdump, bool* have_dwarf) {
  std::lock_guard lock(st.dwarf_mu);
  DwarfLines* dwarf = dwarf_of(st);
  if (have_dwarf) *have_dwarf = dwarf != nullptr;
  auto it = st.srclines.find(objdump);
  if (it != st.srclines.end()) return it->second;
  std::string text;
  std::vector<SourceFrame> frames;
  if (!dwarf) {
    text = fmt::format("{}[{:x}]", short_name, objdump);  // addr2line could not read the file
  } else if (dwarf->lookup(objdump, false, &frames) && !frames.empty()) {
    if (!frames[0].file.empty()) {
      text = fmt::format("{}:{}", source_file(frames[0]), frames[0].line);
    } else if (frames[0].unit_without_row) {
      text = ":0";
    }
  }
  // No line: addr2line still names the file of a local function from the symbol table.
  if (text.empty() && dwarf) text = st.symbol_file_line(objdump);
  // else: addr2line's "??:0", which perf does not print
  st.srclines.emplace(objdump, text);
  return text;
}

bool Symbolizer::source_position(const session::Map& map, int32_t pid, uint64_t addr, std::string* file,
                                 unsigned* line) {
  uint64_t rel = addr;
  DsoState* st = state_for_map(map, pid, &rel);
  if (!st || st->kind != DsoState::Kind::kElf || st->dwarf_path.empty()) return false;
  const uint64_t objdump = rel + st->text_offset;
  std::lock_guard lock(st->dwarf_mu);
  auto it = st->positions.find(objdump);
  if (it == st->positions.end()) {
    std::pair<std::string, unsigned> at{"", 0};
    std::vector<SourceFrame> frames;
    if (DwarfLines* dwarf = dwarf_of(*st); dwarf && dwarf->lookup(objdump, false, &frames) && !frames.empty()) {
      at = {frames[0].file, frames[0].line};
    }
    it = st->positions.emplace(objdump, std::move(at)).first;
  }
  if (it->second.first.empty()) return false;
  *file = it->second.first;
  *line = it->second.second;
  return true;
}

std::string Symbolizer::report_srcline(const session::Map& map, int32_t pid, uint64_t ip, bool frame, bool with_name,
                                       bool plain_unknown) {
  uint64_t rel = ip;
  DsoState* st = state_for_map(map, pid, &rel);
  const std::string_view short_name = map.dso ? map.dso->short_name() : std::string_view("[unknown]");
  const Resolved r = resolve(map, map.dso && map.dso->kernel ? -1 : pid, ip);
  // The address perf hands to addr2line: the map-relative one in objdump terms for the sample's
  // own entry; for a callchain entry perf 6.1 converts the raw address as if it were relative,
  // which lands outside the file for every mapped DSO.
  uint64_t objdump = rel;
  uint64_t sym_start = r.sym ? r.sym->start : 0;
  const bool elf = st && st->kind == DsoState::Kind::kElf;
  if (elf) {
    objdump = (frame ? ip : rel) + st->text_offset;
    // perf keeps the symbols of a shared object (and a PIE) at their ELF addresses.
    if (!st->exec_type) {
      sym_start += st->text_offset;
      if (frame) objdump = ip;
    }
  } else if (st && st->kind == DsoState::Kind::kModule && !frame) {
    // A module's address as perf keys it: relative to where the module was loaded.
    objdump = map.map_ip(ip);
  } else if (frame || (map.dso && map.dso->kernel)) {
    objdump = ip;
  }
  auto fallback = [&] {
    if (plain_unknown) return std::string();
    if (r.sym) return fmt::format("{}+{}", with_name ? r.sym->name() : std::string_view(), objdump - sym_start);
    return fmt::format("{}[{:x}]", st && st->kind == DsoState::Kind::kJit ? std::string_view(st->short_name) : short_name,
                       objdump);
  };
  if (!elf || st->dwarf_path.empty() || frame) return fallback();
  bool have_dwarf = false;
  const std::string text = cached_srcline(*st, short_name, objdump, &have_dwarf);
  if (!text.empty() && have_dwarf) return text;
  // No line: addr2line still names the function from the file's symbols (see srcline()), and
  // perf then shows "??:0"; where it cannot (the PLT, code below a section's first symbol) perf
  // shows the symbol + offset or "<dso>[<address>]".
  if (have_dwarf && !st->addr2line_unnamed(objdump)) return "??:0";
  return fallback();
}

std::vector<InlineFrame> Symbolizer::inline_frames(const session::Map& map, int32_t pid, uint64_t addr) {
  std::vector<InlineFrame> out;
  Resolved r = resolve(map, pid, addr);
  if (!r.sym) return out;
  uint64_t rel = addr;
  DsoState* st = state_for_map(map, pid, &rel);
  if (!st || st->kind != DsoState::Kind::kElf || st->dwarf_path.empty()) return out;
  uint64_t objdump = rel + st->text_offset;
  std::lock_guard lock(st->dwarf_mu);
  auto it = st->chains.find(objdump);
  if (it == st->chains.end()) {
    DwarfLines* dwarf = dwarf_of(*st);
    DsoState::Chain chain;
    chain.found = dwarf && dwarf->lookup(objdump, true, &chain.frames);
    it = st->chains.emplace(objdump, std::move(chain)).first;
  }
  if (!it->second.found) {
    // No line and no function for the address, but the file has DWARF: addr2line still answers
    // with the symbol table's function and "??:?" (or the file of a local function, see
    // SymbolFiles), and perf shows that one frame with "??:0".
    // Not where addr2line names no function (a PLT: perf keeps the frame and prints
    // "<dso>[<offset>]").
    if (!dwarf_of(*st) || st->addr2line_unnamed(objdump)) return out;
    InlineFrame frame;
    frame.function = std::string(r.sym->name());
    frame.inlined = false;
    frame.srcline = st->symbol_file_line(objdump);
    if (frame.srcline.empty()) frame.srcline = "??:0";
    out.push_back(std::move(frame));
    return out;
  }
  for (const SourceFrame& f : it->second.frames) {
    InlineFrame frame;
    if (f.function.empty()) {
      // Code with lines but no function in DWARF (assembly): binutils' addr2line, which perf
      // runs, names it from the symbol table, so perf shows the frame's own symbol.
      frame.function = std::string(r.sym->name());
      frame.inlined = false;
    } else {
      frame.function = f.function;
      if (options_.demangle) {
        if (auto d = demangle(frame.function)) frame.function = std::move(*d);
      }
      frame.inlined = frame.function != r.sym->name();
    }
    if (!f.file.empty()) {
      frame.srcline = fmt::format("{}:{}", source_file(f), f.line);
    } else if (f.unit_without_row) {
      frame.srcline = ":0";
    } else {
      frame.srcline = "??:0";  // addr2line's "??:?"
    }
    out.push_back(std::move(frame));
  }
  return out;
}

std::span<const Symbol* const> Symbolizer::inline_symbols(const session::Map& map, int32_t pid, uint64_t addr) {
  uint64_t rel = addr;
  DsoState* st = state_for_map(map, pid, &rel);
  if (!st || st->kind != DsoState::Kind::kElf || st->dwarf_path.empty()) return {};
  const uint64_t objdump = rel + st->text_offset;
  {
    std::lock_guard lock(st->dwarf_mu);
    if (auto it = st->inline_chains.find(objdump); it != st->inline_chains.end()) return it->second;
  }
  // A chain is made once per address (the symbol lookup too); inline_frames() takes the lock
  // itself, so two threads may both make one, the first kept.
  Resolved r = resolve(map, pid, addr);
  if (!r.sym) return {};
  std::vector<InlineFrame> frames = inline_frames(map, pid, addr);
  std::lock_guard lock(st->dwarf_mu);
  std::vector<const Symbol*> out;
  out.reserve(frames.size());
  for (const InlineFrame& f : frames) {
    if (!f.inlined) {
      out.push_back(r.sym);
      continue;
    }
    std::string key = fmt::format("{:x}:{}", r.sym->start, f.function);
    auto [it, fresh] = st->inline_syms_by_key.try_emplace(std::move(key), nullptr);
    if (fresh) {
      const std::string& name = st->inline_names.emplace_back(f.function);
      Symbol& s = st->inline_syms.emplace_back(*r.sym);
      s.name_ptr = name.c_str();
      s.name_len = static_cast<uint32_t>(name.size());
      s.inlined = 1;
      it->second = &s;
    }
    out.push_back(it->second);
  }
  return st->inline_chains.try_emplace(objdump, std::move(out)).first->second;
}

void Symbolizer::preload(const std::vector<const session::Dso*>& dsos, util::WorkQueue& queue) {
  note_kernel_ref(dsos);
  queue.parallel_for(0, dsos.size(), [&](size_t i) {
    if (dsos[i]) state_of(*dsos[i]);
  });
}

void Symbolizer::preload_async(const std::vector<const session::Dso*>& dsos, util::WorkQueue& queue) {
  note_kernel_ref(dsos);
  for (const session::Dso* dso : dsos) {
    if (dso) queue.queue_work([this, dso] { state_of(*dso); });
  }
}

void Symbolizer::preload_ahead(const std::vector<const session::Dso*>& dsos, util::WorkQueue& queue) {
  for (const session::Dso* dso : dsos) {
    // A file's symbols only: the kernel's come from kallsyms (read_kernel_symbols_early()).
    if (dso && !dso->kernel) queue.queue_work([this, dso] { state_of(*dso, true); });
  }
}

void Symbolizer::confirm_ahead(const session::Dso& dso) {
  // Waits for the load if it is under way; one not begun yet is made now, as at a first map.
  DsoState* st = &state_of(dso);
  if (!st->ahead) return;
  st->ahead = false;
  if (!options_.symfs.empty() || mount_namespace_root(dso.first_pid).empty()) {
    for (std::string& w : st->held_warnings) warn(std::move(w));
    st->held_warnings.clear();
    return;
  }
  // Its first process lives in another mount namespace (a container): the file is looked for
  // there, as a load at its first map does. No lookup took the state loaded ahead (no map of the
  // DSO was applied before this), so it is replaced whole; kept, not freed, as every state is.
  auto fresh = std::make_unique<DsoState>();
  std::call_once(fresh->once, [&] { load(*fresh, dso, false); });
  DsoState* old = slot_of(dso).exchange(fresh.release(), std::memory_order_acq_rel);
  std::lock_guard lock(replaced_mu_);
  replaced_.emplace_back(old);
}

size_t Symbolizer::memory_bytes() const {
  size_t bytes = 0;
  for (auto& c : *chunks_) {
    Chunk* chunk = c.load();
    if (!chunk) continue;
    bytes += sizeof(Chunk);
    for (auto& s : chunk->slots) {
      if (DsoState* st = s.load()) bytes += sizeof(DsoState) + st->table.memory_bytes();
    }
  }
  if (kernel_) {
    bytes += kernel_->symbols.kernel.memory_bytes();
    for (auto& [n, t] : kernel_->symbols.modules) bytes += t.memory_bytes();
  }
  return bytes;
}

void Symbolizer::on_ksymbol(const perfdata::KsymbolEvent& e) {
  constexpr uint16_t kUnregister = 1;
  if (e.flags & kUnregister) return;
  const session::Map* m = machine_.kernel_maps().find(e.addr);
  if (m && m->dso && m->dso->name && *m->dso->name == kKernelDsoName) add_kernel_symbol(e.addr, e.len, e.name);
}

}  // namespace tperf::symbols
