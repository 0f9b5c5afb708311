// Reading a user-space DSO's symbols from ELF the way perf 6.1 does (dso__load_sym and
// dso__synthesize_plt_symbols): which ELF symbols count, how their values become file-offset
// based addresses (the PT_LOAD rule: st_value - (p_vaddr - p_offset)), and the name@plt entries.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <string>
#include <string_view>
#include <vector>

#include "symbols/elf_file.h"
#include "symbols/symbol_table.h"

namespace tperf::symbols {

// Adds the symbols of `syms` (its .symtab, else its .dynsym) to `table`, their addresses adjusted
// with the program headers of `runtime` (the file that is mapped; may be `syms` itself).
// Returns how many were added. Call table.finish() afterwards.
size_t load_elf_symbols(const ElfFile& syms, const ElfFile& runtime, bool demangle, SymbolTable& table);

// Adds perf's "name@plt" symbols for the .plt entries of `runtime` (from .rela.plt/.rel.plt and
// .dynsym) to a finished table. Returns how many were added.
size_t add_plt_symbols(const ElfFile& runtime, bool demangle, SymbolTable& table);

// Where binutils' addr2line names no function in `f`: the part of each code section below its
// lowest function or label symbol (all of a PLT), as [start, end) in the file's own addresses.
// addr2line looks in .symtab, or in .dynsym when there is none, and takes the nearest symbol
// below the address in the same section whatever its size.
std::vector<std::pair<uint64_t, uint64_t>> code_without_symbols(const ElfFile& f);

// How binutils' addr2line names a source file from the symbol table alone, which it does where
// no line covers the address: it takes the nearest code symbol (function, ifunc or label) at or
// below the address in the same section whatever its size, and a local one takes the name of the
// STT_FILE symbol before it, unless that file symbol opens the table ("crtstuff.c" for
// __do_global_dtors_aux and frame_dummy: addr2line prints "crtstuff.c:?", perf "crtstuff.c:0").
class SymbolFiles {
 public:
  explicit SymbolFiles(const ElfFile& f);
  // The file addr2line names for `addr` (the file's own addresses), "" for none.
  std::string_view file_at(uint64_t addr) const;
  bool empty() const { return files_.empty(); }

 private:
  struct Code {
    uint64_t start = 0, size = 0, section_end = 0;
    uint32_t file = 0;  // index into files_ + 1; 0: none
  };
  std::vector<Code> code_;  // by start, then size
  std::vector<std::string> files_;
};

}  // namespace tperf::symbols
