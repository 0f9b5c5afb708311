// perf's --dsos and -S/--symbols as its sample resolution applies them (report and script
// alike): to the sample's own address, not its callchain. A sample they leave out is hidden
// (report) or not printed (script).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tperf::session {
struct Dso;
struct Map;
}
namespace tperf::symbols {
struct Symbol;
}

namespace tperf::analysis {

class SampleSelection {
 public:
  SampleSelection() = default;
  // `symbols`: names, and addresses: every entry that parses whole as a hexadecimal number
  // (strtoul base 16, "0x" optional) is taken out of the names, as perf takes it, and stands
  // for an address the sample's may equal or lie less than `addr_range` bytes above
  // (--addr-range). So "f0" or "add" select an address, never the function of that name.
  SampleSelection(std::vector<std::string> dsos, std::vector<std::string> symbols, uint64_t addr_range = 0);

  bool selects_dsos() const { return !dsos_.empty(); }
  bool selects_symbols() const { return selects_symbols_; }
  // The symbol entries that are names (perf's report header names the one left, if one is).
  const std::vector<std::string>& names() const { return names_; }

  // The DSO of the sample's map by its short or its long name; a sample without a map, or whose
  // DSO has no name, never matches. True without a DSO list.
  bool dso_selected(const session::Dso* dso) const;
  // `sym`: the sample's symbol or null; `map`: the map its address `addr` lies in, or null
  // (addresses match only in a map). True without a symbol list.
  bool symbol_selected(const symbols::Symbol* sym, const session::Map* map, uint64_t addr) const;

  // strtoul(text, 16) taking the whole entry (trailing blanks allowed), as perf reads it.
  static bool parse_address(const std::string& text, uint64_t* value);

 private:
  std::vector<std::string> dsos_, names_;
  bool selects_symbols_ = false;
  std::vector<uint64_t> addrs_;
  uint64_t addr_range_ = 0;
};

}  // namespace tperf::analysis
