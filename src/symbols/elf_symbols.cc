#include "symbols/elf_symbols.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "symbols/demangle.h"

namespace tperf::symbols {

namespace {

bool is_function(const GElf_Sym& s) {
  unsigned t = GELF_ST_TYPE(s.st_info);
  return (t == STT_FUNC || t == STT_GNU_IFUNC) && s.st_name != 0 && s.st_shndx != SHN_UNDEF;
}

bool is_object(const GElf_Sym& s) {
  return GELF_ST_TYPE(s.st_info) == STT_OBJECT && s.st_name != 0 && s.st_shndx != SHN_UNDEF;
}

bool is_label(const GElf_Sym& s) {
  return GELF_ST_TYPE(s.st_info) == STT_NOTYPE && s.st_name != 0 && s.st_shndx != SHN_UNDEF &&
         s.st_shndx != SHN_ABS;
}

// ARM's "$a", "$d", "$t", "$x" (optionally ".suffix") mark code/data regions, not functions.
bool is_arm_mapping_symbol(const char* name) {
  return name[0] == '$' && name[1] && std::strchr("adtx", name[1]) && (name[2] == '\0' || name[2] == '.');
}

std::string display_name(const char* raw, bool demangle) {
  if (demangle) {
    if (auto d = symbols::demangle(raw)) return std::move(*d);
  }
  return raw;
}

struct SymbolSection {
  Elf_Data* syms = nullptr;
  Elf_Data* strs = nullptr;
  size_t strtab_index = 0;
  size_t count = 0;
};

bool open_symbol_section(const ElfFile& f, Elf_Scn* scn, const GElf_Shdr& shdr, SymbolSection* out) {
  if (!scn) return false;
  out->syms = elf_getdata(scn, nullptr);
  if (!out->syms || !out->syms->d_buf) return false;
  Elf_Scn* strscn = elf_getscn(f.elf(), shdr.sh_link);
  if (!strscn) return false;
  out->strs = elf_getdata(strscn, nullptr);
  if (!out->strs || !out->strs->d_buf || out->strs->d_size == 0) return false;
  out->strtab_index = shdr.sh_link;
  size_t entsize = gelf_fsize(f.elf(), ELF_T_SYM, 1, EV_CURRENT);
  if (!entsize) return false;
  out->count = out->syms->d_size / entsize;
  return true;
}

// The NUL-terminated name at `off` of a string table, or nullptr when it would run past it.
const char* string_at(const Elf_Data* strs, size_t off) {
  if (off >= strs->d_size) return nullptr;
  const char* p = static_cast<const char*>(strs->d_buf) + off;
  if (!memchr(p, '\0', strs->d_size - off)) return nullptr;
  return p;
}

}  // namespace

size_t load_elf_symbols(const ElfFile& syms_file, const ElfFile& runtime, bool demangle, SymbolTable& table) {
  GElf_Shdr symshdr;
  size_t symidx = 0;
  Elf_Scn* scn = syms_file.symtab(&symshdr, &symidx);
  if (!scn) scn = syms_file.dynsym(&symshdr, &symidx);
  SymbolSection sec;
  if (!open_symbol_section(syms_file, scn, symshdr, &sec)) return 0;

  Elf* elf = syms_file.elf();
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) return 0;
  size_t runtime_shstrndx = 0;
  bool runtime_names = elf_getshdrstrndx(runtime.elf(), &runtime_shstrndx) == 0;
  const unsigned machine = syms_file.ehdr().e_machine;

  // Room for every entry: a table grown by doubling would copy itself and touch twice the
  // pages, and what stays unused of a large reservation is never touched.
  table.reserve(table.size() + sec.count);
  size_t added = 0;
  for (size_t i = 0; i < sec.count; ++i) {
    GElf_Sym sym;
    if (!gelf_getsym(sec.syms, static_cast<int>(i), &sym)) continue;
    const bool label = is_label(sym);
    if (!label && !is_function(sym) && !is_object(sym)) continue;
    const char* name = string_at(sec.strs, sym.st_name);
    if (!name) continue;
    if ((machine == EM_ARM || machine == EM_AARCH64) && is_arm_mapping_symbol(name)) continue;
    if (sym.st_shndx >= SHN_LORESERVE) continue;  // absolute and common symbols are no code

    Elf_Scn* sym_scn = elf_getscn(elf, sym.st_shndx);
    GElf_Shdr shdr;
    if (!sym_scn || !gelf_getshdr(sym_scn, &shdr)) continue;
    // Sections that are not loaded (.gnu.warning.*) hold nothing a sample can hit.
    if (!(shdr.sh_flags & SHF_ALLOC)) continue;
    const char* section_name = elf_strptr(elf, shstrndx, shdr.sh_name);
    // A debug file keeps section headers but not their contents (NOBITS): the mapped file's own
    // header of that index names the section.
    if (shdr.sh_type == SHT_NOBITS && &runtime != &syms_file && runtime_names) {
      GElf_Shdr rshdr;
      Elf_Scn* rscn = elf_getscn(runtime.elf(), sym.st_shndx);
      if (rscn && gelf_getshdr(rscn, &rshdr)) section_name = elf_strptr(runtime.elf(), runtime_shstrndx, rshdr.sh_name);
    }
    if (label) {
      if (!section_name || (!std::strstr(section_name, "text") && !std::strstr(section_name, "data"))) continue;
    }
    uint64_t value = sym.st_value;
    if (machine == EM_ARM && GELF_ST_TYPE(sym.st_info) == STT_FUNC && (value & 1)) --value;  // Thumb bit
    // perf 6.1 keeps every user-space symbol as an offset into the file, through the segment
    // that loads it; a symbol outside every PT_LOAD is dropped.
    GElf_Phdr phdr;
    if (!runtime.load_segment_for_vaddr(value, &phdr)) continue;
    value -= phdr.p_vaddr - phdr.p_offset;
    table.add(value, sym.st_size, static_cast<uint8_t>(GELF_ST_BIND(sym.st_info)),
              static_cast<uint8_t>(GELF_ST_TYPE(sym.st_info)), display_name(name, demangle));
    ++added;
  }
  return added;
}

std::vector<std::pair<uint64_t, uint64_t>> code_without_symbols(const ElfFile& f) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  Elf* elf = f.elf();
  size_t nsections = 0;
  if (elf_getshdrnum(elf, &nsections) != 0 || nsections == 0) return out;
  // The lowest symbol value per section index; UINT64_MAX where the section has none.
  std::vector<uint64_t> lowest(nsections, UINT64_MAX);
  GElf_Shdr symshdr;
  size_t symidx = 0;
  Elf_Scn* scn = f.symtab(&symshdr, &symidx);
  if (!scn) scn = f.dynsym(&symshdr, &symidx);
  SymbolSection sec;
  if (open_symbol_section(f, scn, symshdr, &sec)) {
    for (size_t i = 0; i < sec.count; ++i) {
      GElf_Sym sym;
      if (!gelf_getsym(sec.syms, static_cast<int>(i), &sym)) continue;
      const unsigned t = GELF_ST_TYPE(sym.st_info);
      if (t != STT_FUNC && t != STT_GNU_IFUNC && t != STT_NOTYPE) continue;
      if (sym.st_shndx == SHN_UNDEF || sym.st_shndx >= nsections) continue;  // also SHN_ABS and the like
      lowest[sym.st_shndx] = std::min<uint64_t>(lowest[sym.st_shndx], sym.st_value);
    }
  }
  for (size_t i = 1; i < nsections; ++i) {
    Elf_Scn* s = elf_getscn(elf, i);
    GElf_Shdr shdr;
    if (!s || !gelf_getshdr(s, &shdr)) continue;
    if (!(shdr.sh_flags & SHF_EXECINSTR) || !(shdr.sh_flags & SHF_ALLOC) || shdr.sh_size == 0) continue;
    const uint64_t start = shdr.sh_addr;
    const uint64_t end = shdr.sh_addr + shdr.sh_size < start ? UINT64_MAX : shdr.sh_addr + shdr.sh_size;
    const uint64_t named_from = std::clamp(lowest[i], start, end);
    if (named_from > start) out.emplace_back(start, named_from);
  }
  return out;
}

SymbolFiles::SymbolFiles(const ElfFile& f) {
  GElf_Shdr symshdr;
  size_t symidx = 0;
  SymbolSection sec;
  if (!open_symbol_section(f, f.symtab(&symshdr, &symidx), symshdr, &sec)) return;
  size_t nsections = 0;
  if (elf_getshdrnum(f.elf(), &nsections) != 0) return;
  std::vector<uint64_t> section_end(nsections, 0);
  for (size_t i = 1; i < nsections; ++i) {
    GElf_Shdr shdr;
    Elf_Scn* s = elf_getscn(f.elf(), i);
    if (s && gelf_getshdr(s, &shdr) && (shdr.sh_flags & SHF_ALLOC)) {
      section_end[i] = shdr.sh_addr + shdr.sh_size < shdr.sh_addr ? UINT64_MAX : shdr.sh_addr + shdr.sh_size;
    }
  }
  uint32_t file = 0;
  bool other_seen = false;        // a symbol other than a file symbol so far
  bool file_after_other = false;  // the current file symbol came after one
  bool any_file = false;
  for (size_t i = 1; i < sec.count; ++i) {  // entry 0 is the null symbol
    GElf_Sym sym;
    if (!gelf_getsym(sec.syms, static_cast<int>(i), &sym)) continue;
    const unsigned t = GELF_ST_TYPE(sym.st_info);
    if (t == STT_FILE) {
      const char* name = string_at(sec.strs, sym.st_name);
      file = 0;
      if (name && *name) {
        files_.emplace_back(name);
        file = static_cast<uint32_t>(files_.size());
      }
      file_after_other = other_seen;
      continue;
    }
    other_seen = true;
    if (t != STT_FUNC && t != STT_GNU_IFUNC && t != STT_NOTYPE) continue;
    if (sym.st_shndx == SHN_UNDEF || sym.st_shndx >= nsections || section_end[sym.st_shndx] == 0) continue;
    const bool named = GELF_ST_BIND(sym.st_info) == STB_LOCAL && file_after_other && file != 0;
    any_file |= named;
    code_.push_back({sym.st_value, sym.st_size, section_end[sym.st_shndx], named ? file : 0});
  }
  if (!any_file) {
    code_.clear();
    files_.clear();
    return;
  }
  std::sort(code_.begin(), code_.end(),
            [](const Code& a, const Code& b) { return a.start != b.start ? a.start < b.start : a.size < b.size; });
}

std::string_view SymbolFiles::file_at(uint64_t addr) const {
  // The last symbol at or below the address, the largest of those starting there.
  auto it = std::upper_bound(code_.begin(), code_.end(), addr, [](uint64_t a, const Code& c) { return a < c.start; });
  if (it == code_.begin()) return {};
  --it;
  if (addr >= it->section_end || it->file == 0) return {};
  return files_[it->file - 1];
}

size_t add_plt_symbols(const ElfFile& runtime, bool demangle, SymbolTable& table) {
  GElf_Shdr dynshdr;
  size_t dynidx = 0;
  Elf_Scn* dynscn = runtime.dynsym(&dynshdr, &dynidx);
  if (!dynscn) return 0;
  GElf_Shdr relshdr;
  Elf_Scn* relscn = runtime.section(".rela.plt", &relshdr);
  if (!relscn) relscn = runtime.section(".rel.plt", &relshdr);
  if (!relscn || relshdr.sh_link != dynidx) return 0;
  if (relshdr.sh_type != SHT_RELA && relshdr.sh_type != SHT_REL) return 0;
  GElf_Shdr pltshdr;
  if (!runtime.section(".plt", &pltshdr)) return 0;
  Elf_Data* rel = elf_getdata(relscn, nullptr);
  SymbolSection dyn;
  if (!rel || !open_symbol_section(runtime, dynscn, dynshdr, &dyn)) return 0;

  // perf 6.1's layout: a header, then one entry per relocation, both of the section's entry size
  // except on the architectures it knows better.
  uint64_t header = pltshdr.sh_entsize, entry = pltshdr.sh_entsize;
  switch (runtime.ehdr().e_machine) {
    case EM_ARM:
      header = 20, entry = 12;
      break;
    case EM_AARCH64:
      header = 32, entry = 16;
      break;
    case EM_SPARC:
      header = 48, entry = 12;
      break;
    case EM_SPARCV9:
      header = 128, entry = 32;
      break;
    default:
      break;
  }
  const bool rela = relshdr.sh_type == SHT_RELA;
  size_t entsize = gelf_fsize(runtime.elf(), rela ? ELF_T_RELA : ELF_T_REL, 1, EV_CURRENT);
  if (!entsize) return 0;
  size_t count = rel->d_size / entsize;
  uint64_t offset = pltshdr.sh_offset + header;
  size_t added = 0;
  for (size_t i = 0; i < count; ++i) {
    uint64_t info;
    if (rela) {
      GElf_Rela r;
      if (!gelf_getrela(rel, static_cast<int>(i), &r)) break;
      info = r.r_info;
    } else {
      GElf_Rel r;
      if (!gelf_getrel(rel, static_cast<int>(i), &r)) break;
      info = r.r_info;
    }
    GElf_Sym sym;
    const char* name = "";
    if (gelf_getsym(dyn.syms, static_cast<int>(GELF_R_SYM(info)), &sym)) {
      if (const char* n = string_at(dyn.strs, sym.st_name)) name = n;
    }
    table.add_after_finish(offset, entry, kBindGlobal, kTypeFunc, display_name(name, demangle) + "@plt");
    offset += entry;
    ++added;
  }
  table.merge_late_adds();
  return added;
}

}  // namespace tperf::symbols
