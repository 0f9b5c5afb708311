#include "symbols/jit_map.h"

#include "util/text.h"

namespace tperf::symbols {

using util::parse_hex_prefix;

size_t parse_jit_map(std::string_view text, SymbolTable& table) {
  size_t added = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    uint64_t start = 0, size = 0;
    size_t n = parse_hex_prefix(line, &start);
    if (!n || n >= line.size() || line[n] != ' ') continue;
    line.remove_prefix(n + 1);
    n = parse_hex_prefix(line, &size);
    if (!n || n >= line.size() || line[n] != ' ') continue;
    std::string_view name = line.substr(n + 1);
    if (!name.empty() && name.back() == '\r') name.remove_suffix(1);
    if (name.empty()) continue;
    table.add(start, size, kBindGlobal, kTypeFunc, name);
    ++added;
  }
  table.finish(SymbolTable::Fixups::kNone);
  return added;
}

}  // namespace tperf::symbols
