#include "symbols/dwarf_lines.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "symbols/elf_file.h"

namespace tperf::symbols {

struct DwarfLines::Impl {
  Dwfl* dwfl = nullptr;
  Dwfl_Module* module = nullptr;
  Dwfl_Callbacks callbacks{};
  char* debuginfo_path = nullptr;
  bool units_given_back = false;

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

// binutils' addr2line (what perf runs, and what perf's srclines are held to) names the rows of a
// DWARF 5 line-table sequence that come before any DW_LNS_set_file after entry 0 (the
// compilation's primary file), where the format (and libdw) start the file register at entry 1.
// gcc repeats the primary file as entry 1, so the two agree except in tables where entry 1 is a
// header (glibc's). The assembler emits set_file only on a change, so the rows named that way
// are the ones from the start of their sequence whose file is still 1. Returns entry 0's name for
// such a row, else nullptr.
const char* default_file_row_name(Dwfl_Line* line) {
  Dwarf_Addr bias = 0;
  Dwarf_Line* dl = dwfl_dwarf_line(line, &bias);
  Dwarf_Die* cudie = dwfl_linecu(line);
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
  // The row's place among the CU's rows (sorted by address): the first at its address, then on
  // to the row itself.
  Dwarf_Addr addr = 0;
  if (dwarf_lineaddr(dl, &addr) != 0) return nullptr;
  size_t lo = 0, hi = nlines;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    Dwarf_Addr a = 0;
    Dwarf_Line* l = dwarf_onesrcline(lines, mid);
    if (!l || dwarf_lineaddr(l, &a) != 0) return nullptr;
    if (a < addr) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  size_t at = lo;
  while (at < nlines && dwarf_onesrcline(lines, at) != dl) ++at;
  if (at == nlines) return nullptr;
  // Back to the start of the sequence: every row on the way must still be in file 1.
  for (size_t i = at; i-- > 0;) {
    Dwarf_Line* prev = dwarf_onesrcline(lines, i);
    bool end = false;
    if (!prev || dwarf_lineendsequence(prev, &end) != 0 || end) break;
    size_t prev_idx = 0;
    Dwarf_Files* prev_files = nullptr;
    if (dwarf_line_file(prev, &prev_files, &prev_idx) != 0 || prev_idx != 1) return nullptr;
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

}  // namespace

std::unique_ptr<DwarfLines> DwarfLines::open(const std::string& path, std::string* error) {
  std::unique_ptr<DwarfLines> d(new DwarfLines());
  d->impl_ = std::make_unique<Impl>();
  Impl& impl = *d->impl_;
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

bool DwarfLines::lookup(uint64_t vaddr, bool with_inlines, std::vector<SourceFrame>* frames) {
  frames->clear();
  Impl& impl = *impl_;
  if (!impl.module) return false;
  Dwfl_Line* line = dwfl_module_getsrc(impl.module, vaddr);
  if (!impl.units_given_back) {
    impl.units_given_back = true;
    give_back_unit_pages(impl.module);
  }
  if (!line) {
    // Inside a unit means inside one of .debug_aranges' ranges (binutils' test; libdwfl's own
    // unit lookup also answers for addresses in the gaps between them).
    Dwarf_Addr unit_bias = 0;
    Dwarf* dbg = dwfl_module_getdwarf(impl.module, &unit_bias);
    Dwarf_Aranges* aranges = nullptr;
    size_t naranges = 0;
    if (!dbg || dwarf_getaranges(dbg, &aranges, &naranges) != 0 || !dwarf_getarange_addr(aranges, vaddr - unit_bias)) {
      return false;
    }
    SourceFrame none;
    none.unit_without_row = true;
    frames->push_back(std::move(none));
    return true;
  }
  int lineno = 0;
  const char* file = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr);
  if (const char* primary = default_file_row_name(line)) file = primary;
  SourceFrame first;
  first.file = file ? file : "";
  first.line = lineno > 0 ? static_cast<unsigned>(lineno) : 0;
  if (!with_inlines) {
    frames->push_back(std::move(first));
    return true;
  }

  Dwarf_Addr bias = 0;
  Dwarf_Die* cu = dwfl_module_addrdie(impl.module, vaddr, &bias);
  Dwarf_Die* scopes = nullptr;
  int n = cu ? dwarf_getscopes(cu, vaddr - bias, &scopes) : 0;
  Dwarf_Files* files = nullptr;
  size_t nfiles = 0;
  if (cu && dwarf_getsrcfiles(cu, &files, &nfiles) != 0) files = nullptr;

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
      if (const char* f = dwarf_filesrc(files, call_file, nullptr, nullptr)) current.file = f;
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
