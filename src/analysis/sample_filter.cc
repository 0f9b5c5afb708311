#include "analysis/sample_filter.h"

#include <algorithm>
#include <cctype>
#include <limits>

#include "session/machine.h"
#include "symbols/symbol_table.h"

namespace tperf::analysis {

namespace {

bool has(const std::vector<std::string>& list, std::string_view v) {
  return std::find(list.begin(), list.end(), v) != list.end();
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool SampleSelection::parse_address(const std::string& text, uint64_t* value) {
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  bool negative = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
  // "0x" counts as a prefix only when a digit follows it (else strtoul reads the "0" alone).
  if (i + 2 < text.size() && text[i] == '0' && (text[i + 1] == 'x' || text[i + 1] == 'X') &&
      hex_value(text[i + 2]) >= 0) {
    i += 2;
  }
  const size_t digits_from = i;
  uint64_t v = 0;
  bool overflow = false;
  for (; i < text.size() && hex_value(text[i]) >= 0; ++i) {
    if (v > (std::numeric_limits<uint64_t>::max() >> 4)) overflow = true;
    v = (v << 4) | static_cast<uint64_t>(hex_value(text[i]));
  }
  if (i == digits_from || overflow) return false;
  for (; i < text.size(); ++i) {
    if (!std::isspace(static_cast<unsigned char>(text[i]))) return false;
  }
  *value = negative ? uint64_t{0} - v : v;
  return true;
}

SampleSelection::SampleSelection(std::vector<std::string> dsos, std::vector<std::string> symbols, uint64_t addr_range)
    : dsos_(std::move(dsos)), selects_symbols_(!symbols.empty()), addr_range_(addr_range) {
  // An entry that reads as a number is an address, and no longer a name ("f0" never names f0).
  for (std::string& s : symbols) {
    uint64_t a;
    if (parse_address(s, &a)) {
      addrs_.push_back(a);
    } else {
      names_.push_back(std::move(s));
    }
  }
}

bool SampleSelection::dso_selected(const session::Dso* dso) const {
  if (dsos_.empty()) return true;
  if (!dso || !dso->name) return false;
  return has(dsos_, dso->short_name()) || has(dsos_, *dso->name);
}

bool SampleSelection::symbol_selected(const symbols::Symbol* sym, const session::Map* map, uint64_t addr) const {
  if (!selects_symbols_) return true;
  if (sym && has(names_, sym->name())) return true;
  if (!map) return false;
  for (uint64_t a : addrs_) {
    if (addr == a || (addr_range_ && addr >= a && addr - a < addr_range_)) return true;
  }
  return false;
}

}  // namespace tperf::analysis
