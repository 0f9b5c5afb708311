// The kernel's symbols from a kallsyms file (/proc/kallsyms or a copy), as perf 6.1 keeps them:
// T/W/D/B symbols, aliases and zero sizes fixed up over the whole file, then split into the
// kernel image's symbols (shifted by the KASLR delta) and each module's.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "symbols/symbol_table.h"
#include "util/file_buffer.h"

namespace tperf::symbols {

struct KernelSymbols {
  SymbolTable kernel;                        // addresses as the recording saw them
  std::map<std::string, SymbolTable> modules;  // by module name without brackets ("ext4")
  uint64_t delta = 0;                        // subtracted from the file's kernel addresses
};

// Parses kallsyms text. `ref_name`/`ref_addr`: the reference symbol of the recording's kernel map
// ("_text" at the address the kernel map's pgoff holds); when the file has it elsewhere, kernel
// symbols move by the difference (the file came from another boot of a KASLR kernel).
// Returns nullopt with *error when the text has no usable symbols: none at all, or every address
// zero (kernel.kptr_restrict hides them from this user).
std::optional<KernelSymbols> parse_kallsyms(std::string_view text, std::string_view ref_name, uint64_t ref_addr,
                                            std::string* error);
// The same on a buffer it takes (FileBuffer::read of /proc/kallsyms): the kernel's table keeps
// the buffer and its names point into it.
std::optional<KernelSymbols> parse_kallsyms(util::FileBuffer text, std::string_view ref_name, uint64_t ref_addr,
                                            std::string* error);

}  // namespace tperf::symbols
