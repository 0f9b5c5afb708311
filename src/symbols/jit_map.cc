#include "symbols/jit_map.h"

namespace tperf::symbols {

namespace {

// Hex digits at the start of `s` (an optional 0x first); the count consumed, 0 when none.
size_t parse_hex_prefix(std::string_view s, uint64_t* out) {
  size_t i = 0;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) i = 2;
  size_t first = i;
  uint64_t v = 0;
  for (; i < s.size() && i - first < 16; ++i) {
    char c = s[i];
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    } else {
      break;
    }
    v = v << 4 | static_cast<uint64_t>(d);
  }
  if (i == first) return 0;
  *out = v;
  return i;
}

}  // namespace

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
