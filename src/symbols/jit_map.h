// JIT symbol files (/tmp/perf-PID.map, written by JITs for perf): "START SIZE name" per line,
// hex numbers, the name to the end of the line. perf takes them as they are: no demangling,
// no alias or size fixups.
#pragma once

#include <string_view>

#include "symbols/symbol_table.h"

namespace tperf::symbols {

// Adds the symbols of a perf-PID.map text to `table` (lines that do not parse are skipped, as perf
// does) and finishes it. Returns how many were added.
size_t parse_jit_map(std::string_view text, SymbolTable& table);

}  // namespace tperf::symbols
