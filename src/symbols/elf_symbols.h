// Reading a user-space DSO's symbols from ELF the way perf 6.1 does (dso__load_sym and
// dso__synthesize_plt_symbols): which ELF symbols count, how their values become file-offset
// based addresses (the PT_LOAD rule: st_value - (p_vaddr - p_offset)), and the name@plt entries.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
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

}  // namespace tperf::symbols
