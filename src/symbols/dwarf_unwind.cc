#include "symbols/dwarf_unwind.h"

#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <sys/stat.h>

#include <bit>
#include <cstdlib>
#include <cstring>

#include "perfdata/abi.h"
#include "symbols/debug_lookup.h"
#include "symbols/elf_file.h"

namespace tperf::symbols {

namespace {

// perf's x86 register ids (the bit numbers of sample_regs_user).
enum PerfRegX86 : unsigned {
  kRegAx = 0,
  kRegBx = 1,
  kRegCx = 2,
  kRegDx = 3,
  kRegSi = 4,
  kRegDi = 5,
  kRegBp = 6,
  kRegSp = 7,
  kRegIp = 8,
  kRegR8 = 16,
};

constexpr uint64_t kAbi32 = 1;
constexpr uint64_t kAbi64 = 2;

// The value of perf register `id` in a dump; false when the mask did not ask for it.
bool reg_value(const perfdata::RegsDump& regs, unsigned id, uint64_t* value) {
  if (id >= 64 || !(regs.mask & (uint64_t{1} << id))) return false;
  size_t index = static_cast<size_t>(std::popcount(regs.mask & ((uint64_t{1} << id) - 1)));
  if (index >= regs.regs.size()) return false;
  *value = regs.regs[index];
  return true;
}

uint64_t reg_or_zero(const perfdata::RegsDump& regs, unsigned id) {
  uint64_t v = 0;
  reg_value(regs, id, &v);
  return v;
}

bool is_regular_file(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// No separate debug file is looked for. perf 6.1 here unwinds with libunwind, which on x86-64
// steps with .eh_frame only, never a .debug_frame: a pc whose FDE is only in a debug file's
// .debug_frame (code built without unwind tables, its debug info split off) ends perf's walk
// there. libdwfl, asked for the module's DWARF CFI where .eh_frame has no FDE, would look for the
// debug file, inflate all of its compressed sections (libc's: 12 MB, 45 ms) and walk on. (A
// .debug_frame in the file itself is still followed: the module's own DWARF is not a debug file.)
int no_debuginfo(Dwfl_Module*, void**, const char*, Dwarf_Addr, const char*, const char*, GElf_Word, char**) {
  return -1;
}

const Dwfl_Callbacks kOfflineCallbacks = {
    .find_elf = nullptr,
    .find_debuginfo = no_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = nullptr,  // only the standard finders read it
};

}  // namespace

// An ELF file a DSO's frames are unwound with; found once per DSO.
struct DwarfUnwinder::FileState {
  bool tried = false;
  std::string path;  // "" when no file could be found
  std::unique_ptr<ElfFile> elf;
};

struct DwarfUnwinder::Walk {
  DwarfUnwinder* self = nullptr;
  SpaceState* space = nullptr;
  const session::Thread* thread = nullptr;
  const perfdata::Sample* sample = nullptr;
  bool have_sp = false;
  uint64_t sp = 0;
  std::span<const uint8_t> stack;  // the valid part of the copy, starting at sp
  std::vector<session::CallchainFrame> frames;
  unsigned left = 0;
  unsigned limit = 0;  // `left` at the start
  bool restart = false;  // a stale module was met: rebuild the Dwfl and walk again
};

struct DwarfUnwinder::SpaceState {
  const session::AddressSpace* key = nullptr;
  Dwfl* dwfl = nullptr;
  bool attached = false;
  int32_t pid = 0;
  // What each reported module was made from, to notice when the maps moved under it.
  struct Origin {
    const session::Dso* dso;
    uint64_t bias;
  };
  std::unordered_map<Dwfl_Module*, Origin> modules;
  Walk* walk = nullptr;  // the unwind in progress
  // report_module()'s last kOk answer: within [lo, hi) (its map and its module alike) of the
  // maps at this version, the answer is the same, and a walk asks twice per frame, mostly about
  // the file the frame before was in.
  struct LastOk {
    const session::AddressSpace* maps = nullptr;
    uint64_t version = 0;
    uint64_t lo = 0, hi = 0;
    const session::Map* map = nullptr;
  } last_ok;
  // The unwind rules of the code at each pc walked so far (see DwarfUnwinder::rules_at).
  std::unordered_map<uint64_t, PcRules> rules;

  ~SpaceState() {
    if (dwfl) dwfl_end(dwfl);
  }
};

namespace {

pid_t next_thread_cb(Dwfl* dwfl, void* dwfl_arg, void** thread_argp) {
  // One thread: the sampled one, whatever its tid.
  if (*thread_argp != nullptr) return 0;
  *thread_argp = dwfl_arg;
  return dwfl_pid(dwfl);
}

bool memory_read_cb(Dwfl*, Dwarf_Addr addr, Dwarf_Word* result, void* dwfl_arg) {
  auto* space = static_cast<DwarfUnwinder::SpaceState*>(dwfl_arg);
  DwarfUnwinder::Walk* walk = space->walk;
  if (!walk || !walk->have_sp) return false;
  if (addr + sizeof(Dwarf_Word) < addr) return false;
  if (addr >= walk->sp && addr - walk->sp + sizeof(Dwarf_Word) <= walk->stack.size()) {
    std::memcpy(result, walk->stack.data() + (addr - walk->sp), sizeof(Dwarf_Word));
    return true;
  }
  uint64_t v = 0;
  if (!walk->self->read_file_word(*walk->thread, addr, &v)) return false;
  *result = v;
  return true;
}

// The x86-64 registers of a dump in DWARF order (rax, rdx, rcx, rbx, rsi, rdi, rbp, rsp, r8-r15,
// then the return address, rip); registers the mask left out are 0, as in perf.
void x86_64_dwarf_regs(const perfdata::RegsDump& r, Dwarf_Word out[17]) {
  const unsigned first[8] = {kRegAx, kRegDx, kRegCx, kRegBx, kRegSi, kRegDi, kRegBp, kRegSp};
  for (unsigned i = 0; i < 8; ++i) out[i] = reg_or_zero(r, first[i]);
  for (unsigned i = 0; i < 8; ++i) out[8 + i] = reg_or_zero(r, kRegR8 + i);
  out[16] = reg_or_zero(r, kRegIp);
}

bool set_initial_registers_cb(Dwfl_Thread* thread, void* thread_arg) {
  auto* space = static_cast<DwarfUnwinder::SpaceState*>(thread_arg);
  if (!space->walk) return false;
  const perfdata::RegsDump& r = space->walk->sample->regs_user;
  // DWARF register numbers of the SysV psABIs; registers the mask left out are 0, as in perf.
  if (r.abi == kAbi32) {
    Dwarf_Word regs[9] = {reg_or_zero(r, kRegAx), reg_or_zero(r, kRegCx), reg_or_zero(r, kRegDx),
                          reg_or_zero(r, kRegBx), reg_or_zero(r, kRegSp), reg_or_zero(r, kRegBp),
                          reg_or_zero(r, kRegSi), reg_or_zero(r, kRegDi), reg_or_zero(r, kRegIp)};
    return dwfl_thread_state_registers(thread, 0, 9, regs);
  }
  Dwarf_Word regs[17];
  x86_64_dwarf_regs(r, regs);
  return dwfl_thread_state_registers(thread, 0, 17, regs);
}

const Dwfl_Thread_Callbacks kThreadCallbacks = {
    .next_thread = next_thread_cb,
    .get_thread = nullptr,
    .memory_read = memory_read_cb,
    .set_initial_registers = set_initial_registers_cb,
    .detach = nullptr,
    .thread_detach = nullptr,
};

int frame_cb(Dwfl_Frame* frame, void* arg) {
  auto* walk = static_cast<DwarfUnwinder::Walk*>(arg);
  Dwarf_Addr pc = 0;
  if (!dwfl_frame_pc(frame, &pc, nullptr)) return DWARF_CB_ABORT;
  // The module of this pc must be there before libdwfl unwinds past it (asking whether the frame
  // is an activation unwinds the next one).
  if (!walk->self->enter_frame(*walk, pc)) return DWARF_CB_ABORT;
  bool activation = false;
  if (!dwfl_frame_pc(frame, &pc, &activation)) return DWARF_CB_ABORT;
  // A caller's pc is a return address: the call is the instruction before it.
  if (!activation) --pc;
  return walk->self->record_frame(*walk, pc, nullptr) ? DWARF_CB_OK : DWARF_CB_ABORT;
}

}  // namespace

DwarfUnwinder::DwarfUnwinder(const session::Machine& machine, DwarfUnwindOptions options)
    : machine_(machine), options_(std::move(options)) {
  if (options_.max_cached_spaces == 0) options_.max_cached_spaces = 1;
}

DwarfUnwinder::~DwarfUnwinder() = default;

bool DwarfUnwinder::wants(const perfdata::PerfEventAttr& attr, const perfdata::Sample& sample) {
  if (!copies_stacks(attr)) return false;
  return sample.regs_user.abi != 0 && !sample.regs_user.regs.empty() && sample.stack_dyn_size != 0;
}

DwarfUnwinder::FileState& DwarfUnwinder::file_of(const session::Dso& dso) {
  auto& slot = files_[&dso];
  if (!slot) slot = std::make_unique<FileState>();
  FileState& f = *slot;
  if (f.tried) return f;
  f.tried = true;
  if (!dso.name) return f;
  // perf opens the file by its recorded path (under --symfs), then the build-id cache's copy.
  std::vector<std::string> candidates;
  std::string root = options_.symfs;
  if (root.empty()) root = mount_namespace_root(dso.first_pid);  // a container's file, as perf
  candidates.push_back(join_symfs(root, *dso.name));
  if (!dso.build_id.empty()) {
    DebugLookupOptions lo;
    lo.symfs = options_.symfs;
    lo.buildid_dir = options_.buildid_dir;
    std::string hex = dso.build_id.hex();
    std::string link = buildid_cache_dir(lo) + "/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2);
    candidates.push_back(link);
    candidates.push_back(link + (*dso.name == "[vdso]" ? "/vdso" : "/elf"));
  }
  for (const auto& path : candidates) {
    if (!is_regular_file(path)) continue;
    auto elf = ElfFile::open(path);
    if (!elf) continue;
    f.path = path;
    f.elf = std::move(elf);
    break;
  }
  return f;
}

DwarfUnwinder::SpaceState& DwarfUnwinder::space_of(const session::AddressSpace* space) {
  auto it = spaces_.find(space);
  if (it != spaces_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    return *lru_.front();
  }
  if (lru_.size() >= options_.max_cached_spaces) {
    spaces_.erase(lru_.back()->key);
    lru_.pop_back();
  }
  auto state = std::make_unique<SpaceState>();
  state->key = space;
  lru_.push_front(std::move(state));
  spaces_[space] = lru_.begin();
  return *lru_.front();
}

void DwarfUnwinder::reset_space(SpaceState& state) {
  if (state.dwfl) dwfl_end(state.dwfl);
  state.dwfl = dwfl_begin(&kOfflineCallbacks);
  state.attached = false;
  state.modules.clear();
  state.last_ok = {};
  state.rules.clear();
  ++stats_.dwfl_built;
}

bool DwarfUnwinder::enter_frame(Walk& walk, uint64_t pc) {
  const session::Map* map = nullptr;
  const ModuleResult first = report_module(*walk.space, *walk.thread, pc, &map);
  if (first == ModuleResult::kStale) {
    walk.restart = true;
    return false;
  }
  if (first == ModuleResult::kFailed) {
    // A return address into a mapped file that cannot be read (not under --symfs, or from
    // another machine): perf keeps it, since the frame before gave it, and stops there, as
    // there are no unwind tables to go further with. (The sampled pc, the first frame, was
    // checked before the walk.)
    walk.frames.push_back({pc - 1, perfdata::kMiscUser, map});
    return false;
  }
  return true;
}

bool DwarfUnwinder::record_frame(Walk& walk, uint64_t at, ModuleResult* result) {
  const session::Map* map = nullptr;
  const ModuleResult r = report_module(*walk.space, *walk.thread, at, &map);
  if (result) *result = r;
  if (r == ModuleResult::kStale) {
    walk.restart = true;
    return false;
  }
  if (r == ModuleResult::kFailed) return false;  // perf stops at a file it cannot read
  walk.frames.push_back({at, perfdata::kMiscUser, map});
  return --walk.left != 0;
}

DwarfUnwinder::ModuleResult DwarfUnwinder::report_module(SpaceState& state, const session::Thread& thread,
                                                         uint64_t pc, const session::Map** map_out) {
  const session::AddressSpace* maps = thread.maps();
  const SpaceState::LastOk& last = state.last_ok;
  if (maps && last.maps == maps && last.version == maps->version() && pc >= last.lo && pc < last.hi) {
    *map_out = last.map;
    return ModuleResult::kOk;
  }
  const session::Map* map = machine_.find_map(&thread, perfdata::kMiscUser, pc);
  *map_out = map;
  Dwfl_Module* existing = dwfl_addrmodule(state.dwfl, pc);
  if (!map || !map->dso) {
    // perf reports nothing here; a module left from older maps would still lend its CFI.
    return existing ? ModuleResult::kStale : ModuleResult::kNoModule;
  }
  FileState& file = file_of(*map->dso);
  // Where the file's vaddr 0 sits: the map shows file offset pgoff at `start`, and the load
  // segment holding that offset says which vaddr that offset has.
  uint64_t bias = map->start - map->pgoff;
  if (file.elf) {
    GElf_Phdr ph;
    if (file.elf->ehdr().e_type == ET_EXEC) {
      bias = 0;
    } else if (file.elf->load_segment_for_offset(map->pgoff, &ph)) {
      bias = map->start - map->pgoff + ph.p_offset - ph.p_vaddr;
    }
  }
  if (existing) {
    auto it = state.modules.find(existing);
    if (it != state.modules.end() && it->second.dso == map->dso && it->second.bias == bias) {
      remember_ok(state, maps, map, existing);
      return ModuleResult::kOk;
    }
    return ModuleResult::kStale;
  }
  if (!file.elf) return ModuleResult::kFailed;
  std::string_view short_name = map->dso->short_name();
  std::string name(short_name.empty() ? std::string_view(file.path) : short_name);
  Dwfl_Module* mod = dwfl_report_elf(state.dwfl, name.c_str(), file.path.c_str(), -1, bias, true);
  if (!mod) return ModuleResult::kFailed;
  ++stats_.modules_reported;
  state.modules[mod] = {map->dso, bias};
  if (dwfl_addrmodule(state.dwfl, pc) != mod) return ModuleResult::kFailed;
  remember_ok(state, maps, map, mod);
  return ModuleResult::kOk;
}

void DwarfUnwinder::remember_ok(SpaceState& state, const session::AddressSpace* maps, const session::Map* map,
                                Dwfl_Module* mod) {
  Dwarf_Addr low = 0, high = 0;
  if (!maps || !dwfl_module_info(mod, nullptr, &low, &high, nullptr, nullptr, nullptr, nullptr)) {
    state.last_ok = {};
    return;
  }
  state.last_ok = {maps, maps->version(), std::max<uint64_t>(map->start, low), std::min<uint64_t>(map->end, high), map};
}

bool DwarfUnwinder::read_file_word(const session::Thread& thread, uint64_t addr, uint64_t* value) {
  // Outside the stack copy only file-backed read-only bytes are known: those of the mapped file.
  const session::Map* map = machine_.find_map(&thread, perfdata::kMiscUser, addr);
  if (!map || !map->dso || map->identity) return false;
  FileState& file = file_of(*map->dso);
  if (!file.elf) return false;
  uint64_t off = map->map_ip(addr);
  std::span<const uint8_t> image = file.elf->image();
  if (off > image.size() || image.size() - off < sizeof(uint64_t)) return false;
  std::memcpy(value, image.data() + off, sizeof(uint64_t));
  return true;
}

size_t DwarfUnwinder::unwind_once(SpaceState& state, Walk& walk) {
  uint64_t ip = 0;
  if (!reg_value(walk.sample->regs_user, kRegIp, &ip)) return 0;
  if (!state.dwfl) reset_space(state);
  if (!state.dwfl) return 0;
  const session::Map* map = nullptr;
  ModuleResult first = report_module(state, *walk.thread, ip, &map);
  if (first == ModuleResult::kStale) {
    walk.restart = true;
    return 0;
  }
  // perf's unwinder (libunwind) always puts the sampled pc first, then steps with the unwind
  // tables of the file it is in: a mapped file it cannot read (a recording of another machine)
  // leaves that one frame. A pc in no file at all gives no frames.
  if (first == ModuleResult::kFailed) {
    walk.frames.push_back({ip, perfdata::kMiscUser, map});
    return walk.frames.size();
  }
  if (first != ModuleResult::kOk) return 0;
  if (options_.cached_rules && walk.sample->regs_user.abi == kAbi64) {
    if (walk_with_cached_rules(state, walk)) return walk.frames.size();
    walk.frames.clear();  // a rule it cannot follow: libdwfl walks the whole stack again
    walk.left = walk.limit;
    ++stats_.slow_walks;
  }
  if (!state.attached) {
    if (!dwfl_attach_state(state.dwfl, nullptr, state.pid, &kThreadCallbacks, &state)) return 0;
    state.attached = true;
  }
  state.walk = &walk;
  int err = dwfl_getthread_frames(state.dwfl, state.pid, frame_cb, &walk);
  state.walk = nullptr;
  if (walk.restart) return 0;
  // perf keeps what was unwound before an error, unless nothing was.
  (void)err;
  return walk.frames.size();
}

// How libdwfl steps from one frame to its caller (frame_unwind.c of elfutils 0.188), for the
// rules it can follow: the pc's FDE in the module's .eh_frame, CFA and register rules whose
// location expressions use only the operations below. Each rule is evaluated as libdwfl's
// expr_eval does: a DW_OP_call_frame_cfa makes the result a location read from memory unless
// DW_OP_stack_value follows, a register the frame does not have or a word that cannot be read
// leaves the caller's register unset, an undefined return address or a zero pc ends the walk.
// Anything else (no FDE, a signal frame, another operation, a pc outside every module, where
// libdwfl would try .debug_frame or the frame-pointer fallback) makes the walk go to libdwfl.
struct DwarfUnwinder::PcRules {
  static constexpr unsigned kRegs = 17;  // x86-64: DWARF registers 0-15, 16 the return address
  enum class Kind : uint8_t { kUndefined, kSame, kExpr };
  struct Rule {
    Kind kind = Kind::kUndefined;
    std::vector<Dwarf_Op> ops;
  };
  bool usable = false;
  std::vector<Dwarf_Op> cfa;
  Rule regs[kRegs];
};

namespace {

bool op_supported(const Dwarf_Op& op) {
  const uint8_t a = op.atom;
  return (a >= DW_OP_lit0 && a <= DW_OP_lit31) || (a >= DW_OP_breg0 && a <= DW_OP_breg31) || a == DW_OP_bregx ||
         a == DW_OP_const1u || a == DW_OP_const1s || a == DW_OP_const2u || a == DW_OP_const2s ||
         a == DW_OP_const4u || a == DW_OP_const4s || a == DW_OP_const8u || a == DW_OP_const8s ||
         a == DW_OP_constu || a == DW_OP_consts || a == DW_OP_plus_uconst || a == DW_OP_plus ||
         a == DW_OP_minus || a == DW_OP_deref || a == DW_OP_call_frame_cfa || a == DW_OP_stack_value;
}

bool ops_supported(const Dwarf_Op* ops, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (!op_supported(ops[i])) return false;
  }
  return true;
}

// The registers of one frame as libdwfl keeps them: a value and whether it is set.
struct FrameRegs {
  uint64_t value[DwarfUnwinder::PcRules::kRegs] = {};
  uint32_t set = 0;
  bool get(uint64_t regno, uint64_t* v) const {
    if (regno >= DwarfUnwinder::PcRules::kRegs || !(set & (uint32_t{1} << regno))) return false;
    *v = value[regno];
    return true;
  }
};

}  // namespace

const DwarfUnwinder::PcRules& DwarfUnwinder::rules_at(SpaceState& state, uint64_t pc) {
  auto [it, fresh] = state.rules.try_emplace(pc);
  PcRules& r = it->second;
  if (!fresh) return r;
  Dwfl_Module* mod = dwfl_addrmodule(state.dwfl, pc);
  if (!mod) return r;
  Dwarf_Addr bias = 0;
  Dwarf_CFI* cfi = dwfl_module_eh_cfi(mod, &bias);
  if (!cfi) return r;
  Dwarf_Frame* frame = nullptr;
  if (dwarf_cfi_addrframe(cfi, pc - bias, &frame) != 0 || !frame) return r;
  bool signal = false;
  const int ra = dwarf_frame_info(frame, nullptr, nullptr, &signal);
  Dwarf_Op* cfa_ops = nullptr;
  size_t cfa_n = 0;
  bool ok = ra == 16 && !signal && dwarf_frame_cfa(frame, &cfa_ops, &cfa_n) == 0 && cfa_n > 0 &&
            ops_supported(cfa_ops, cfa_n);
  if (ok) r.cfa.assign(cfa_ops, cfa_ops + cfa_n);
  for (unsigned regno = 0; ok && regno < PcRules::kRegs; ++regno) {
    Dwarf_Op mem[3];
    Dwarf_Op* ops = nullptr;
    size_t n = 0;
    if (dwarf_frame_register(frame, static_cast<int>(regno), mem, &ops, &n) != 0) {
      ok = false;  // libdwfl goes on without the register; not followed here
    } else if (n == 0) {
      if (ops == mem) {
        r.regs[regno].kind = PcRules::Kind::kUndefined;
      } else if (ops == nullptr) {
        r.regs[regno].kind = PcRules::Kind::kSame;
      } else {
        ok = false;
      }
    } else if (ops_supported(ops, n)) {
      r.regs[regno].kind = PcRules::Kind::kExpr;
      r.regs[regno].ops.assign(ops, ops + n);
    } else {
      ok = false;
    }
  }
  std::free(frame);
  r.usable = ok;
  return r;
}

namespace {

// libdwfl's expr_eval over the supported operations. `cfa`: the frame's CFA expression, or
// nullptr while the CFA itself is evaluated. `read` reads a word of the sampled process.
template <typename Read>
bool eval_ops(const std::vector<Dwarf_Op>& ops, const FrameRegs& regs, const std::vector<Dwarf_Op>* cfa,
              const Read& read, uint64_t* result) {
  uint64_t stack[16];
  size_t used = 0;
  auto push = [&](uint64_t v) {
    if (used == std::size(stack)) return false;
    stack[used++] = v;
    return true;
  };
  auto pop = [&](uint64_t* v) {
    if (used == 0) return false;
    *v = stack[--used];
    return true;
  };
  bool location = false;
  for (const Dwarf_Op& op : ops) {
    uint64_t a = 0, b = 0;
    const uint8_t atom = op.atom;
    if (atom >= DW_OP_lit0 && atom <= DW_OP_lit31) {
      if (!push(atom - DW_OP_lit0)) return false;
    } else if (atom >= DW_OP_breg0 && atom <= DW_OP_breg31) {
      if (!regs.get(atom - DW_OP_breg0, &a) || !push(a + op.number)) return false;
    } else {
      switch (atom) {
        case DW_OP_bregx:
          if (!regs.get(op.number, &a) || !push(a + op.number2)) return false;
          break;
        case DW_OP_const1u: case DW_OP_const1s: case DW_OP_const2u: case DW_OP_const2s:
        case DW_OP_const4u: case DW_OP_const4s: case DW_OP_const8u: case DW_OP_const8s:
        case DW_OP_constu: case DW_OP_consts:
          if (!push(op.number)) return false;
          break;
        case DW_OP_plus_uconst:
          if (!pop(&a) || !push(a + op.number)) return false;
          break;
        case DW_OP_plus:
          if (!pop(&b) || !pop(&a) || !push(a + b)) return false;
          break;
        case DW_OP_minus:
          if (!pop(&b) || !pop(&a) || !push(a - b)) return false;
          break;
        case DW_OP_deref:
          if (!pop(&a) || !read(a, &b) || !push(b)) return false;
          break;
        case DW_OP_call_frame_cfa:
          if (!cfa || !eval_ops(*cfa, regs, nullptr, read, &a) || !push(a)) return false;
          location = true;
          break;
        case DW_OP_stack_value:
          location = false;
          break;
        default:
          return false;
      }
    }
  }
  if (!pop(result)) return false;
  if (location && !read(*result, result)) return false;
  return true;
}

}  // namespace

bool DwarfUnwinder::walk_with_cached_rules(SpaceState& state, Walk& walk) {
  // The registers perf dumped, as set_initial_registers_cb gives them to libdwfl (all set).
  FrameRegs regs;
  x86_64_dwarf_regs(walk.sample->regs_user, regs.value);
  regs.set = (uint32_t{1} << PcRules::kRegs) - 1;
  state.walk = &walk;
  auto read = [&state](uint64_t addr, uint64_t* value) {
    Dwarf_Word w = 0;
    if (!memory_read_cb(nullptr, addr, &w, &state)) return false;
    *value = w;
    return true;
  };
  struct Done {
    SpaceState& s;
    ~Done() { s.walk = nullptr; }
  } done{state};
  for (bool initial = true;; initial = false) {
    // frame_cb's part: the frame's module, then the frame itself.
    const uint64_t pc = regs.value[16];
    if (!enter_frame(walk, pc)) return true;
    const uint64_t at = initial ? pc : pc - 1;
    ModuleResult r = ModuleResult::kOk;
    if (!record_frame(walk, at, &r)) return true;
    // libdwfl's step to the caller.
    if (r != ModuleResult::kOk) return false;  // no module: libdwfl's frame-pointer fallback
    const PcRules& rules = rules_at(state, at);
    if (!rules.usable) return false;
    FrameRegs caller;
    bool pc_undefined = false;
    for (unsigned regno = 0; regno < PcRules::kRegs; ++regno) {
      const PcRules::Rule& rule = rules.regs[regno];
      uint64_t v = 0;
      if (rule.kind == PcRules::Kind::kUndefined) {
        if (regno == 16) pc_undefined = true;
        continue;
      }
      if (rule.kind == PcRules::Kind::kSame) {
        if (!regs.get(regno, &v)) continue;
      } else if (!eval_ops(rule.ops, regs, &rules.cfa, read, &v)) {
        continue;
      }
      caller.value[regno] = v;
      caller.set |= uint32_t{1} << regno;
    }
    uint64_t next = 0;
    if (pc_undefined || !caller.get(16, &next) || next == 0) return true;  // the end of the stack
    regs = caller;
  }
}

DwarfUnwinder::AheadKey DwarfUnwinder::key_of(const perfdata::Sample& sample) {
  AheadKey k;
  k.time = sample.time;
  k.pid = sample.pid;
  k.tid = sample.tid;
  k.dyn_size = sample.stack_dyn_size;
  uint64_t h = sample.regs_user.abi * 0x9e3779b97f4a7c15ULL ^ sample.regs_user.mask;
  for (uint64_t r : sample.regs_user.regs) h = std::rotl(h, 7) * 0x100000001b3ULL ^ r;
  k.regs_hash = h;
  return k;
}

size_t DwarfUnwinder::unwind(const session::Thread& thread, const perfdata::Sample& sample, unsigned max_stack,
                             std::vector<session::CallchainFrame>* out) {
  if (max_stack == 0 || sample.regs_user.abi == 0 || sample.stack_dyn_size == 0) return 0;
  const session::AddressSpace* space = thread.maps();
  if (!space) return 0;
  ++stats_.samples;
  if (ahead_ && (ahead_->complete || ahead_->frames.size() >= max_stack) && ahead_->key == key_of(sample)) {
    ++stats_.ahead;
    const size_t n = std::min<size_t>(max_stack, ahead_->frames.size());
    for (size_t i = 0; i < n; ++i) {
      const AheadFrame& f = ahead_->frames[i];
      out->push_back({f.ip, perfdata::kMiscUser,
                      f.has_map ? machine_.find_map(&thread, perfdata::kMiscUser, f.map_start) : nullptr});
    }
    return n;
  }
  SpaceState& state = space_of(space);
  if (!state.dwfl) state.pid = thread.pid();

  Walk walk;
  walk.self = this;
  walk.space = &state;
  walk.thread = &thread;
  walk.sample = &sample;
  walk.have_sp = reg_value(sample.regs_user, kRegSp, &walk.sp);
  // The copy holds dyn_size valid bytes from sp; a record shorter than that gives what it has.
  size_t valid = static_cast<size_t>(std::min<uint64_t>(sample.stack_dyn_size, sample.stack_user.size()));
  walk.stack = sample.stack_user.first(valid);

  for (int attempt = 0; attempt < 2; ++attempt) {
    walk.frames.clear();
    walk.left = max_stack;
    walk.limit = max_stack;
    walk.restart = false;
    unwind_once(state, walk);
    if (!walk.restart) break;
    reset_space(state);
    state.pid = thread.pid();
  }
  if (walk.restart) return 0;
  out->insert(out->end(), walk.frames.begin(), walk.frames.end());
  return walk.frames.size();
}

}  // namespace tperf::symbols
