// Source lines and inline chains of one ELF file from its DWARF (elfutils libdw), the answers
// `addr2line -i -f` gives: for an address, the innermost inlined function with the line of the
// address, then each caller with the line of the call, out to the real function.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tperf::symbols {

struct SourceFrame {
  std::string function;  // as DWARF names it (the linkage name when it has one: mangled); may be ""
  std::string file;      // full path as DWARF gives it; "" when unknown
  // The path binutils' addr2line prints (perf --full-source-path shows it): a relative `file`
  // after the unit's DW_AT_comp_dir, even where `file` already begins with that directory
  // ("./elf/./elf/rtld.c"); `file` itself when it is absolute or the unit names no directory.
  std::string addr2line_path;
  unsigned line = 0;
  // No line-table row covers the address, but a compilation unit's ranges do (code from
  // top-level asm): binutils' addr2line then names an empty file, which perf prints as ":0".
  bool unit_without_row = false;
};

// Not thread-safe: callers serialize use of one DwarfLines (the Symbolizer holds a mutex per DSO).
class DwarfLines {
 public:
  // Opens `path`'s DWARF: its own .debug_info, or the separate debug file that its build id or
  // .gnu_debuglink names (libdw's standard search: /usr/lib/debug and next to the file).
  // nullptr when the file cannot be read as ELF; a file without DWARF gives an object whose
  // lookups fail.
  // How the unit of an address is found: this file's index of .debug_aranges, which reads a
  // unit's header only when an address falls in it, or libdwfl's own lookup (whose first use
  // reads every unit's header); both give the same answers. The index falls back to libdwfl's
  // where .debug_aranges is missing, compressed or malformed.
  enum class UnitLookup { kOwnIndex, kLibdwfl };
  static std::unique_ptr<DwarfLines> open(const std::string& path, std::string* error = nullptr,
                                          UnitLookup units = UnitLookup::kOwnIndex);
  ~DwarfLines();
  DwarfLines(const DwarfLines&) = delete;
  DwarfLines& operator=(const DwarfLines&) = delete;

  // `vaddr` is the address in the file's own terms (what objdump shows). Frames innermost
  // first; `with_inlines` false gives only the first, without its function name (cheaper).
  // False when DWARF has no line for it.
  bool lookup(uint64_t vaddr, bool with_inlines, std::vector<SourceFrame>* frames);

 private:
  DwarfLines() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tperf::symbols
