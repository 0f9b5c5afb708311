#include "symbols/kallsyms.h"

#include <cctype>
#include <cstring>

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

// perf takes text and weak symbols for functions and every other kept one for a data object.
bool is_function_type(char type) {
  char t = static_cast<char>(std::toupper(static_cast<unsigned char>(type)));
  return t == 'T' || t == 'W';
}

uint8_t binding_of(char type) {
  if (type == 'W' || type == 'w') return kBindWeak;
  return std::isupper(static_cast<unsigned char>(type)) ? kBindGlobal : kBindLocal;
}

}  // namespace

std::optional<KernelSymbols> parse_kallsyms(std::string_view text, std::string_view ref_name, uint64_t ref_addr,
                                            std::string* error) {
  return parse_kallsyms(util::FileBuffer::copy_of(text), ref_name, ref_addr, error);
}

std::optional<KernelSymbols> parse_kallsyms(util::FileBuffer text, std::string_view ref_name, uint64_t ref_addr,
                                            std::string* error) {
  // The names stay where they are in the text, each ended with a '\0' written over what
  // followed it, and the table keeps the text: no copy of 120,000 names.
  char* const base = text.data();
  const size_t size = text.size();
  size_t newlines = 0;
  for (const char* p = base; (p = static_cast<const char*>(std::memchr(p, '\n', size - (p - base)))); ++p) ++newlines;
  SymbolTable all;
  all.reserve(newlines + 1);
  size_t lines = 0, nonzero = 0;
  bool have_ref = false;
  uint64_t file_ref = 0;
  size_t pos = 0;
  while (pos < size) {
    const char* nl = static_cast<const char*>(std::memchr(base + pos, '\n', size - pos));
    size_t line_end = nl ? static_cast<size_t>(nl - base) : size;
    std::string_view line(base + pos, line_end - pos);
    pos = nl ? line_end + 1 : size;
    // "<hex address> <type> <name>[\t[module]]"
    size_t sp1 = line.find(' ');
    if (sp1 == std::string_view::npos || sp1 + 3 > line.size() || line[sp1 + 2] != ' ') continue;
    uint64_t addr;
    if (!parse_hex(line.substr(0, sp1), &addr)) continue;
    char type = line[sp1 + 1];
    std::string_view name = line.substr(sp1 + 3);
    while (!name.empty() && (name.back() == '\r' || name.back() == ' ')) name.remove_suffix(1);
    if (name.empty()) continue;
    // The byte after the name is the line's end (or what was trimmed, or the buffer's '\0').
    base[name.data() + name.size() - base] = '\0';
    ++lines;
    if (addr) ++nonzero;
    if (!have_ref && !ref_name.empty() && name == ref_name) {
      have_ref = true;
      file_ref = addr;
    }
    if (!kept_type(type)) continue;
    all.add_in_place(addr, 0, binding_of(type),
                     is_function_type(type) ? kTypeFunc : kTypeObject, name);
  }
  if (lines == 0) {
    if (error) *error = "no symbols in it";
    return std::nullopt;
  }
  if (nonzero == 0) {
    if (error) *error = "every address is zero (kernel.kptr_restrict hides them)";
    return std::nullopt;
  }
  all.adopt(std::move(text));
  all.finish(SymbolTable::Fixups::kKallsyms);

  KernelSymbols out;
  if (have_ref && ref_addr) out.delta = file_ref - ref_addr;
  // Module symbols ("name\t[module]") go to their module's table; the kernel's stay in place.
  for (const Symbol& s : all.symbols()) {
    std::string_view name = s.name();
    size_t tab = name.find('\t');
    if (tab == std::string_view::npos) continue;
    std::string_view module = name.substr(tab + 1);
    if (module.size() >= 2 && module.front() == '[' && module.back() == ']') module = module.substr(1, module.size() - 2);
    out.modules[std::string(module)].add(s.start, s.end - s.start, s.binding, s.type, name.substr(0, tab));
  }
  all.retain_and_shift([](const Symbol& s) { return s.name().find('\t') == std::string_view::npos; }, out.delta);
  out.kernel = std::move(all);
  out.kernel.finish(SymbolTable::Fixups::kNone);
  for (auto& [name, table] : out.modules) table.finish(SymbolTable::Fixups::kNone);
  return out;
}

}  // namespace tperf::symbols
