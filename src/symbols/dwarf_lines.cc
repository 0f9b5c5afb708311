#include "symbols/dwarf_lines.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "symbols/elf_file.h"

namespace tperf::symbols {

// One address range of .debug_aranges and the unit (its header's offset in .debug_info) it
// belongs to.
struct UnitRange {
  uint64_t addr;
  uint64_t length;
  uint64_t unit;
};

struct DwarfLines::Impl {
  Dwfl* dwfl = nullptr;
  Dwfl_Module* module = nullptr;
  Dwfl_Callbacks callbacks{};
  char* debuginfo_path = nullptr;
  bool units_given_back = false;
  // The units' address ranges, read from .debug_aranges by this file (read_unit_ranges below):
  // sorted by address; `runs` are the indexes of the first range of each run of ranges of one
  // unit. `index_state`: 0 not read yet, 1 read, -1 not usable (libdwfl's own lookup then).
  std::vector<UnitRange> ranges;
  std::vector<uint32_t> runs;
  int index_state = 0;

  ~Impl() {
    if (dwfl) dwfl_end(dwfl);
  }
};

namespace {

const char* die_name(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  // The linkage name first (what addr2line prints without -C), through abstract origins and
  // specifications.
  for (int at : {DW_AT_linkage_name, DW_AT_MIPS_linkage_name, DW_AT_name}) {
    if (dwarf_attr_integrate(die, at, &attr)) {
      if (const char* s = dwarf_formstring(&attr)) return s;
    }
  }
  return nullptr;
}

// The assembler (gas) describes a function with several names (clone3, __clone3, __GI___clone3)
// as top-level subprograms of one range; addr2line names the address after the last of the
// narrowest ones covering it, where libdw's scopes give the first.
void prefer_last_alias(Dwarf_Die* cu, Dwarf_Addr addr, Dwarf_Die* found) {
  Dwarf_Attribute attr;
  Dwarf_Word lang = 0;
  if (dwarf_formudata(dwarf_attr(cu, DW_AT_language, &attr), &lang) != 0 || lang != DW_LANG_Mips_Assembler) return;
  Dwarf_Addr low = 0, high = 0;
  if (dwarf_lowpc(found, &low) != 0 || dwarf_highpc(found, &high) != 0) return;
  Dwarf_Die die = *found;
  Dwarf_Die next;
  while (dwarf_siblingof(&die, &next) == 0) {
    die = next;
    if (dwarf_tag(&die) != DW_TAG_subprogram) continue;
    Dwarf_Addr l = 0, h = 0;
    if (dwarf_lowpc(&die, &l) != 0 || dwarf_highpc(&die, &h) != 0) continue;
    if (l <= addr && addr < h && h - l <= high - low) {
      *found = die;
      low = l;
      high = h;
    }
  }
}

bool line_file_and_number(Dwarf_Line* l, size_t* file, int* line) {
  Dwarf_Files* f = nullptr;
  return l && dwarf_line_file(l, &f, file) == 0 && dwarf_lineno(l, line) == 0;
}

// Whether row `i` of a unit's rows (libdw's order: by address, an end-of-sequence row before the
// other rows of its address) is one a sequence ended with, at the address where it ends (a `.loc`
// just before the end of its section). Such a row comes after its sequence's end row, where the
// next sequence may start at the same address; it covers no code, and it repeats the file and
// line of the row before that end row, which a row of the next sequence rarely does: that is the
// test. binutils, which reads the sequences in their own order, gives it no address to answer for.
bool trails_ended_sequence(Dwarf_Lines* lines, size_t i) {
  Dwarf_Line* l = dwarf_onesrcline(lines, i);
  Dwarf_Addr a = 0;
  size_t file = 0;
  int line = 0;
  if (!l || dwarf_lineaddr(l, &a) != 0 || !line_file_and_number(l, &file, &line)) return false;
  for (size_t k = i; k-- > 0;) {
    Dwarf_Line* e = dwarf_onesrcline(lines, k);
    Dwarf_Addr ea = 0;
    bool end = false;
    if (!e || dwarf_lineaddr(e, &ea) != 0 || ea != a) return false;
    if (dwarf_lineendsequence(e, &end) != 0 || !end) continue;
    size_t last_file = 0;
    int last_line = 0;
    return k > 0 && line_file_and_number(dwarf_onesrcline(lines, k - 1), &last_file, &last_line) &&
           last_file == file && last_line == line;
  }
  return false;
}

// The index of `row` among its unit's rows, or nlines.
size_t index_of_row(Dwarf_Lines* lines, size_t nlines, Dwarf_Line* row) {
  Dwarf_Addr addr = 0;
  if (dwarf_lineaddr(row, &addr) != 0) return nlines;
  size_t lo = 0, hi = nlines;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    Dwarf_Addr a = 0;
    Dwarf_Line* l = dwarf_onesrcline(lines, mid);
    if (!l || dwarf_lineaddr(l, &a) != 0) return nlines;
    if (a < addr) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  // On through the rows at that address only.
  for (; lo < nlines; ++lo) {
    Dwarf_Line* l = dwarf_onesrcline(lines, lo);
    Dwarf_Addr a = 0;
    if (l == row) return lo;
    if (!l || dwarf_lineaddr(l, &a) != 0 || a != addr) break;
  }
  return nlines;
}

// The row that covers an address, given the last row at or before it (what libdw's lookups find):
// that row, unless a sequence ended with it (trails_ended_sequence), for it covers nothing; then
// a row of a sequence that starts at the same address, or nullptr.
Dwarf_Line* covering_row(Dwarf_Die* cu, Dwarf_Line* row) {
  Dwarf_Lines* lines = nullptr;
  size_t nlines = 0;
  if (dwarf_getsrclines(cu, &lines, &nlines) != 0) return row;
  const size_t i = index_of_row(lines, nlines, row);
  if (i == nlines || !trails_ended_sequence(lines, i)) return row;
  Dwarf_Addr a = 0;
  dwarf_lineaddr(row, &a);
  for (size_t k = i; k-- > 0;) {
    Dwarf_Line* l = dwarf_onesrcline(lines, k);
    Dwarf_Addr la = 0;
    bool end = false;
    if (!l || dwarf_lineaddr(l, &la) != 0 || la != a || dwarf_lineendsequence(l, &end) != 0 || end) break;
    if (!trails_ended_sequence(lines, k)) return l;
  }
  return nullptr;
}

// binutils' addr2line (what perf runs, and what perf's srclines are held to) names the rows of a
// DWARF 5 line-table sequence that come before any DW_LNS_set_file after entry 0 (the
// compilation's primary file), where the format (and libdw) start the file register at entry 1.
// gcc repeats the primary file as entry 1, so the two agree except in tables where entry 1 is a
// header (glibc's). The assembler emits set_file only on a change, so the rows named that way
// are the ones from the start of their sequence whose file is still 1. Returns entry 0's name for
// such a row, else nullptr.
const char* default_file_row_name(Dwarf_Line* dl, Dwarf_Die* cudie) {
  if (!dl || !cudie) return nullptr;
  Dwarf_Files* files = nullptr;
  size_t idx = 0;
  if (dwarf_line_file(dl, &files, &idx) != 0 || idx != 1) return nullptr;
  Dwarf_Half version = 0;
  if (dwarf_cu_info(cudie->cu, &version, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr) != 0 || version < 5) {
    return nullptr;
  }
  Dwarf_Lines* lines = nullptr;
  size_t nlines = 0;
  if (dwarf_getsrclines(cudie, &lines, &nlines) != 0 || nlines == 0) return nullptr;
  const size_t at = index_of_row(lines, nlines, dl);
  if (at == nlines) return nullptr;
  // Back to the start of the sequence: every row on the way must still be in file 1 (a row left
  // by a sequence that ended at its address is not on the way: see trails_ended_sequence).
  for (size_t i = at; i-- > 0;) {
    Dwarf_Line* prev = dwarf_onesrcline(lines, i);
    bool end = false;
    if (!prev || dwarf_lineendsequence(prev, &end) != 0 || end) break;
    size_t prev_idx = 0;
    Dwarf_Files* prev_files = nullptr;
    if (dwarf_line_file(prev, &prev_files, &prev_idx) != 0) return nullptr;
    if (prev_idx == 1) continue;
    if (trails_ended_sequence(lines, i)) break;
    return nullptr;
  }
  return dwarf_filesrc(files, 0, nullptr, nullptr);
}

// libdw's address-to-unit index reads the header of every unit in .debug_info, and the kernel
// faults in the pages around each one: most of the section (4.4 of libc's 5.8 MB) stays resident
// for a few units a report looks at. Once the index is built, the section's pages are given back
// to the kernel; the units looked up later come back a page at a time. MADV_PAGEOUT only reclaims:
// a page is never lost (a private copy libelf may have written is kept), only read again.
void give_back_unit_pages(Dwfl_Module* module) {
#ifdef MADV_PAGEOUT
  Dwarf_Addr bias = 0;
  Dwarf* dbg = dwfl_module_getdwarf(module, &bias);
  Elf* elf = dbg ? dwarf_getelf(dbg) : nullptr;
  GElf_Shdr shdr;
  Elf_Scn* scn = elf ? find_section(elf, ".debug_info", &shdr) : nullptr;
  if (!scn || (shdr.sh_flags & SHF_COMPRESSED)) return;
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (!data || !data->d_buf) return;
  // Whole pages inside the section only.
  static const uintptr_t kPage = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = (reinterpret_cast<uintptr_t>(data->d_buf) + kPage - 1) / kPage * kPage;
  const auto end = (reinterpret_cast<uintptr_t>(data->d_buf) + data->d_size) / kPage * kPage;
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_PAGEOUT);
#else
  (void)module;
#endif
}

// libdwfl finds the unit of an address through libdw's table of .debug_aranges, and libdw
// builds that table by reading the header of every unit the ranges name (to learn where each
// unit's first DIE starts): for libc's debug file, 4126 unit headers spread over 4.4 of its
// 5.8 MB of .debug_info, all faulted in at the first lookup, which made the peak RSS of a
// DWARF-unwound report. This reads .debug_aranges itself (96 KB for libc) and reads the header
// of a unit only when an address falls in it. It answers as libdwfl 0.188 does: the ranges
// sorted by address, runs of ranges of one unit taken as one (the gaps inside a run belong to
// it), an address after the last run's start belonging to it up to the end of the last range.
// false: the section is missing, compressed, of another byte order or malformed; the caller
// then uses libdwfl's lookup, as before.
bool read_unit_ranges(Dwfl_Module* module, std::vector<UnitRange>* ranges, std::vector<uint32_t>* runs) {
  Dwarf_Addr bias = 0;
  Dwarf* dbg = dwfl_module_getdwarf(module, &bias);
  Elf* elf = dbg ? dwarf_getelf(dbg) : nullptr;
  if (!elf) return false;
  const char* ident = elf_getident(elf, nullptr);
  if (!ident || ident[EI_DATA] != ELFDATA2LSB) return false;  // read below as little-endian
  GElf_Shdr shdr;
  Elf_Scn* scn = find_section(elf, ".debug_aranges", &shdr);
  if (!scn || (shdr.sh_flags & SHF_COMPRESSED) || shdr.sh_type == SHT_NOBITS) return false;
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (!data || !data->d_buf || data->d_size == 0) return false;
  const auto* base = static_cast<const uint8_t*>(data->d_buf);
  const size_t size = data->d_size;
  auto get = [&](size_t at, size_t n, uint64_t* v) {
    if (at > size || n > size - at) return false;
    uint64_t x = 0;
    for (size_t i = 0; i < n; ++i) x |= static_cast<uint64_t>(base[at + i]) << (8 * i);
    *v = x;
    return true;
  };
  std::vector<UnitRange> out;
  size_t at = 0;
  while (at < size) {
    const size_t set_start = at;
    uint64_t length = 0, version = 0, unit = 0, addr_size = 0, seg_size = 0;
    if (!get(at, 4, &length)) return false;
    at += 4;
    size_t offset_size = 4;
    if (length == 0xffffffffu) {
      if (!get(at, 8, &length)) return false;
      at += 8;
      offset_size = 8;
    } else if (length >= 0xfffffff0u) {
      return false;
    }
    if (length > size - at) return false;
    const size_t set_end = at + static_cast<size_t>(length);
    if (!get(at, 2, &version) || version != 2) return false;
    at += 2;
    if (!get(at, offset_size, &unit)) return false;
    at += offset_size;
    if (!get(at, 1, &addr_size) || !get(at + 1, 1, &seg_size)) return false;
    at += 2;
    if ((addr_size != 4 && addr_size != 8) || seg_size != 0) return false;
    const size_t tuple = 2 * static_cast<size_t>(addr_size);
    at += (tuple - (at - set_start) % tuple) % tuple;
    for (;;) {
      uint64_t addr = 0, len = 0;
      if (at > set_end || tuple > set_end - at) return false;  // no terminating pair
      get(at, addr_size, &addr);
      get(at + addr_size, addr_size, &len);
      at += tuple;
      if (addr == 0 && len == 0) break;
      out.push_back({addr, len, unit});
    }
    at = set_end;
  }
  if (out.empty() || out.size() > UINT32_MAX) return false;  // libdwfl's lookup decides then
  std::stable_sort(out.begin(), out.end(), [](const UnitRange& a, const UnitRange& b) { return a.addr < b.addr; });
  std::vector<uint32_t> starts;
  for (size_t i = 0; i < out.size(); ++i) {
    if (i == 0 || out[i].unit != out[starts.back()].unit) starts.push_back(static_cast<uint32_t>(i));
  }
  *ranges = std::move(out);
  *runs = std::move(starts);
  return true;
}

// The unit that `addr` (in the DWARF's terms) falls in, as libdwfl's address lookup answers;
// false when it is outside every run.
bool unit_of(const std::vector<UnitRange>& ranges, const std::vector<uint32_t>& runs, uint64_t addr, uint64_t* unit) {
  size_t lo = 0, hi = runs.size();
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    const uint64_t start = ranges[runs[mid]].addr;
    if (addr < start) {
      hi = mid;
      continue;
    }
    if (addr > start) {
      if (mid + 1 < runs.size()) {
        if (addr >= ranges[runs[mid + 1]].addr) {
          lo = mid + 1;
          continue;
        }
      } else if (addr > ranges.back().addr && addr - ranges.back().addr > ranges.back().length) {
        return false;  // past the end of the last range (its end itself still counts, as there)
      }
    }
    *unit = ranges[runs[mid]].unit;
    return true;
  }
  return false;
}

// The row of `cu`'s line table for `addr`, as libdwfl's dwfl_module_getsrc picks it: the last row
// at or before the address, unless that row ends a sequence.
Dwarf_Line* row_of(Dwarf_Die* cu, uint64_t addr) {
  Dwarf_Lines* lines = nullptr;
  size_t nlines = 0;
  if (dwarf_getsrclines(cu, &lines, &nlines) != 0 || nlines == 0) return nullptr;
  size_t lo = 0, hi = nlines - 1;
  while (lo < hi) {
    const size_t mid = hi - (hi - lo) / 2;
    Dwarf_Addr a = 0;
    Dwarf_Line* l = dwarf_onesrcline(lines, mid);
    if (!l || dwarf_lineaddr(l, &a) != 0) return nullptr;
    if (addr < a) {
      hi = mid - 1;
    } else {
      lo = mid;
    }
  }
  Dwarf_Line* l = dwarf_onesrcline(lines, lo);
  Dwarf_Addr a = 0;
  bool end = false;
  if (!l || dwarf_lineaddr(l, &a) != 0 || dwarf_lineendsequence(l, &end) != 0) return nullptr;
  return (!end && a <= addr) ? l : nullptr;
}

}  // namespace

std::unique_ptr<DwarfLines> DwarfLines::open(const std::string& path, std::string* error, UnitLookup units) {
  std::unique_ptr<DwarfLines> d(new DwarfLines());
  d->impl_ = std::make_unique<Impl>();
  Impl& impl = *d->impl_;
  if (units == UnitLookup::kLibdwfl) impl.index_state = -1;
  impl.callbacks.find_elf = dwfl_build_id_find_elf;
  impl.callbacks.find_debuginfo = dwfl_standard_find_debuginfo;
  impl.callbacks.section_address = dwfl_offline_section_address;
  impl.callbacks.debuginfo_path = &impl.debuginfo_path;
  impl.dwfl = dwfl_begin(&impl.callbacks);
  if (!impl.dwfl) {
    if (error) *error = dwfl_errmsg(-1);
    return nullptr;
  }
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (error) *error = fmt::format("{}: {}", path, std::strerror(errno));
    return nullptr;
  }
  // Reported at its link-time addresses (base 0, no p_vaddr added): lookups take file vaddrs.
  impl.module = dwfl_report_elf(impl.dwfl, path.c_str(), path.c_str(), fd, 0, false);
  if (!impl.module) {
    if (error) *error = fmt::format("{}: {}", path, dwfl_errmsg(-1));
    ::close(fd);
    return nullptr;
  }
  dwfl_report_end(impl.dwfl, nullptr, nullptr);
  return d;
}

DwarfLines::~DwarfLines() = default;

namespace {

// binutils' addr2line joins a relative file name (libdw's, its line-table directory already
// before it) to the unit's compilation directory.
std::string addr2line_path(const char* file, Dwarf_Die* cu) {
  if (!file || !*file) return "";
  if (file[0] == '/' || !cu) return file;
  Dwarf_Attribute attr;
  const char* dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &attr));
  return dir && *dir ? std::string(dir) + "/" + file : std::string(file);
}

}  // namespace

bool DwarfLines::lookup(uint64_t vaddr, bool with_inlines, std::vector<SourceFrame>* frames) {
  frames->clear();
  Impl& impl = *impl_;
  if (!impl.module) return false;
  if (impl.index_state == 0) impl.index_state = read_unit_ranges(impl.module, &impl.ranges, &impl.runs) ? 1 : -1;

  // The unit and its line-table row: from this file's index of .debug_aranges, or from libdwfl
  // where that index could not be read.
  Dwarf_Addr bias = 0;
  Dwarf_Die cu_die;
  Dwarf_Die* cu = nullptr;
  Dwarf_Line* row = nullptr;
  // Without a row: whether the address is inside one of .debug_aranges' ranges (binutils' test
  // for "inside a unit"; the unit lookups also answer for addresses in the gaps between them).
  bool in_a_range = false;
  if (impl.index_state > 0) {
    Dwarf* dbg = dwfl_module_getdwarf(impl.module, &bias);
    uint64_t unit = 0;
    if (!dbg || !unit_of(impl.ranges, impl.runs, vaddr - bias, &unit)) return false;
    Dwarf_Off next = 0;
    size_t header = 0;
    if (dwarf_next_unit(dbg, unit, &next, &header, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr) != 0 ||
        !dwarf_offdie(dbg, unit + header, &cu_die)) {
      return false;
    }
    cu = &cu_die;
    row = row_of(cu, vaddr - bias);
    if (row) row = covering_row(cu, row);
    if (!row) {
      const uint64_t a = vaddr - bias;
      in_a_range = std::any_of(impl.ranges.begin(), impl.ranges.end(),
                               [a](const UnitRange& r) { return a >= r.addr && a - r.addr < r.length; });
    }
  } else {
    Dwfl_Line* line = dwfl_module_getsrc(impl.module, vaddr);
    if (!impl.units_given_back) {
      impl.units_given_back = true;
      give_back_unit_pages(impl.module);
    }
    if (line) {
      row = dwfl_dwarf_line(line, &bias);
      cu = dwfl_linecu(line);
      if (!row || !cu) return false;
      row = covering_row(cu, row);
    }
    if (!row) {
      Dwarf_Addr unit_bias = 0;
      Dwarf* dbg = dwfl_module_getdwarf(impl.module, &unit_bias);
      Dwarf_Aranges* aranges = nullptr;
      size_t naranges = 0;
      in_a_range = dbg && dwarf_getaranges(dbg, &aranges, &naranges) == 0 &&
                   dwarf_getarange_addr(aranges, vaddr - unit_bias) != nullptr;
    }
  }
  if (!row) {
    if (!in_a_range) return false;
    SourceFrame none;
    none.unit_without_row = true;
    frames->push_back(std::move(none));
    return true;
  }
  int lineno = 0;
  dwarf_lineno(row, &lineno);
  const char* file = dwarf_linesrc(row, nullptr, nullptr);
  if (const char* primary = default_file_row_name(row, cu)) file = primary;
  SourceFrame first;
  first.file = file ? file : "";
  first.addr2line_path = addr2line_path(file, cu);
  first.line = lineno > 0 ? static_cast<unsigned>(lineno) : 0;
  if (!with_inlines) {
    frames->push_back(std::move(first));
    return true;
  }

  Dwarf_Die* scopes = nullptr;
  int n = dwarf_getscopes(cu, vaddr - bias, &scopes);
  Dwarf_Files* files = nullptr;
  size_t nfiles = 0;
  if (dwarf_getsrcfiles(cu, &files, &nfiles) != 0) files = nullptr;

  // dwarf_getscopes follows an inlined instance to its abstract definition; the callers of the
  // instance are the DIEs physically around it, which dwarf_getscopes_die gives.
  Dwarf_Die* chain = nullptr;
  int nchain = 0;
  for (int i = 0; i < n; ++i) {
    int tag = dwarf_tag(&scopes[i]);
    if (tag == DW_TAG_inlined_subroutine) {
      nchain = dwarf_getscopes_die(&scopes[i], &chain);
      break;
    }
    if (tag == DW_TAG_subprogram) {
      nchain = 1;
      chain = static_cast<Dwarf_Die*>(std::malloc(sizeof(Dwarf_Die)));
      if (chain) {
        chain[0] = scopes[i];
        prefer_last_alias(cu, vaddr - bias, &chain[0]);
      } else {
        nchain = 0;
      }
      break;
    }
  }
  SourceFrame current = first;
  for (int i = 0; i < nchain; ++i) {
    Dwarf_Die* scope = &chain[i];
    int tag = dwarf_tag(scope);
    if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram) continue;
    const char* name = die_name(scope);
    current.function = name ? name : "";
    frames->push_back(current);
    if (tag == DW_TAG_subprogram) break;
    // The caller's frame is at the call site of this inlined instance.
    Dwarf_Attribute attr;
    Dwarf_Word call_file = 0, call_line = 0;
    current = SourceFrame();
    if (dwarf_formudata(dwarf_attr(scope, DW_AT_call_file, &attr), &call_file) == 0 && files && call_file < nfiles) {
      if (const char* f = dwarf_filesrc(files, call_file, nullptr, nullptr)) {
        current.file = f;
        current.addr2line_path = addr2line_path(f, cu);
      }
    }
    if (dwarf_formudata(dwarf_attr(scope, DW_AT_call_line, &attr), &call_line) == 0) {
      current.line = static_cast<unsigned>(call_line);
    }
  }
  std::free(chain);
  if (frames->empty()) frames->push_back(first);
  std::free(scopes);
  return true;
}

}  // namespace tperf::symbols
