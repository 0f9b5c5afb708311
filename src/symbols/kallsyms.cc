#include "symbols/kallsyms.h"

#include <cctype>

#include "util/text.h"

namespace tperf::symbols {

namespace {

// The whole of `s` as hex digits (kallsyms addresses have no 0x).
bool parse_hex(std::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > 16 || s.starts_with("0x") || s.starts_with("0X")) return false;
  return util::parse_hex_prefix(s, out) == s.size();
}

// perf keeps text, weak, data and bss symbols of kallsyms.
bool kept_type(char type) {
  char t = static_cast<char>(std::toupper(static_cast<unsigned char>(type)));
  return t == 'T' || t == 'W' || t == 'D' || t == 'B';
}

uint8_t binding_of(char type) {
  if (type == 'W' || type == 'w') return kBindWeak;
  return std::isupper(static_cast<unsigned char>(type)) ? kBindGlobal : kBindLocal;
}

}  // namespace

std::optional<KernelSymbols> parse_kallsyms(std::string_view text, std::string_view ref_name, uint64_t ref_addr,
                                            std::string* error) {
  SymbolTable all;
  size_t lines = 0, nonzero = 0;
  bool have_ref = false;
  uint64_t file_ref = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    // "<hex address> <type> <name>[\t[module]]"
    size_t sp1 = line.find(' ');
    if (sp1 == std::string_view::npos || sp1 + 3 > line.size() || line[sp1 + 2] != ' ') continue;
    uint64_t addr;
    if (!parse_hex(line.substr(0, sp1), &addr)) continue;
    char type = line[sp1 + 1];
    std::string_view name = line.substr(sp1 + 3);
    while (!name.empty() && (name.back() == '\r' || name.back() == ' ')) name.remove_suffix(1);
    if (name.empty()) continue;
    ++lines;
    if (addr) ++nonzero;
    if (!have_ref && !ref_name.empty() && name == ref_name) {
      have_ref = true;
      file_ref = addr;
    }
    if (!kept_type(type)) continue;
    all.add(addr, 0, binding_of(type), std::toupper(static_cast<unsigned char>(type)) == 'T' ? kTypeFunc : kTypeObject,
            name);
  }
  if (lines == 0) {
    if (error) *error = "no symbols in it";
    return std::nullopt;
  }
  if (nonzero == 0) {
    if (error) *error = "every address is zero (kernel.kptr_restrict hides them)";
    return std::nullopt;
  }
  all.finish(SymbolTable::Fixups::kKallsyms);

  KernelSymbols out;
  if (have_ref && ref_addr) out.delta = file_ref - ref_addr;
  for (const Symbol& s : all.symbols()) {
    std::string_view name = s.name();
    size_t tab = name.find('\t');
    if (tab == std::string_view::npos) {
      out.kernel.add(s.start - out.delta, s.end - s.start, s.binding, s.type, name);
      continue;
    }
    std::string_view module = name.substr(tab + 1);
    if (module.size() >= 2 && module.front() == '[' && module.back() == ']') module = module.substr(1, module.size() - 2);
    out.modules[std::string(module)].add(s.start, s.end - s.start, s.binding, s.type, name.substr(0, tab));
  }
  out.kernel.finish(SymbolTable::Fixups::kNone);
  for (auto& [name, table] : out.modules) table.finish(SymbolTable::Fixups::kNone);
  return out;
}

}  // namespace tperf::symbols
