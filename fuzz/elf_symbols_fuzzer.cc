// libFuzzer target for ELF symbol loading and DWARF line lookup: any byte string taken as an ELF
// file must either be refused (ElfFile says why, DwarfLines gives nullptr or lookups fail) or
// load cleanly. An exception, crash, sanitizer report or hang is a bug.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "symbols/dwarf_lines.h"
#include "symbols/elf_file.h"
#include "symbols/elf_symbols.h"
#include "symbols/symbol_table.h"

// External linkage, so that the compiler keeps every read the fuzzer makes of parsed results.
uint64_t g_tperf_elf_fuzz_sink = 0;

namespace {

namespace sym = tperf::symbols;

uint64_t& g_sink = g_tperf_elf_fuzz_sink;

void touch(const std::string& s) {
  uint64_t sum = s.size();
  for (char c : s) sum = sum * 31 + static_cast<uint8_t>(c);
  g_sink += sum;
}

// Symbols of `f` (and of the MiniDebugInfo image inside it, as the symbolizer would take them),
// then lookups at the edges of what was loaded. Returns addresses worth asking DWARF about.
std::vector<uint64_t> load_symbols(const sym::ElfFile& f, int depth) {
  std::vector<uint64_t> probes;
  sym::SymbolTable table;
  g_sink += sym::load_elf_symbols(f, f, true, table);
  table.finish();
  g_sink += sym::add_plt_symbols(f, true, table);
  if (const auto& id = f.build_id()) g_sink += id->size;
  if (auto link = f.debuglink()) {
    touch(link->name);
    g_sink += link->crc;
  }
  std::string error;
  if (depth == 0) {
    if (auto inner = f.gnu_debugdata(&error)) {
      if (auto mini = sym::ElfFile::from_memory(std::move(*inner), "fuzz.gnu_debugdata", &error)) {
        sym::SymbolTable from_mini;
        g_sink += sym::load_elf_symbols(*mini, f, true, from_mini);
        from_mini.finish();
      }
    }
  }
  touch(error);
  for (const GElf_Phdr& p : f.load_segments()) {
    for (uint64_t a : {p.p_offset, p.p_offset + p.p_filesz / 2, p.p_offset + p.p_memsz}) {
      if (const sym::Symbol* s = table.find(a)) {
        touch(std::string(s->name()));
        g_sink += s->start + s->end;
      }
      GElf_Phdr found;
      if (f.load_segment_for_offset(a, &found)) g_sink += found.p_vaddr;
    }
    GElf_Phdr found;
    if (f.load_segment_for_vaddr(p.p_vaddr, &found)) g_sink += found.p_offset;
    probes.push_back(p.p_vaddr);
    probes.push_back(p.p_vaddr + p.p_memsz / 2);
  }
  return probes;
}

void lookup_lines(int fd, const std::vector<uint64_t>& probes) {
  std::string error;
  auto lines = sym::DwarfLines::open("/proc/self/fd/" + std::to_string(fd), &error);
  touch(error);
  if (!lines) return;
  std::vector<sym::SourceFrame> frames;
  size_t n = 0;
  for (uint64_t a : probes) {
    if (++n > 16) break;  // enough to reach every path; more only slows the fuzzer
    for (bool inlines : {false, true}) {
      frames.clear();
      if (!lines->lookup(a, inlines, &frames)) continue;
      for (const sym::SourceFrame& fr : frames) {
        touch(fr.function);
        touch(fr.file);
        g_sink += fr.line;
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint64_t> probes;
  std::string error;
  if (auto f = sym::ElfFile::from_memory(std::vector<uint8_t>(data, data + size), "fuzz.elf", &error)) {
    probes = load_symbols(*f, 0);
  }
  touch(error);
  // libdw opens a path: the same bytes through a memfd.
  int fd = memfd_create("elf_fuzz", MFD_CLOEXEC);
  if (fd < 0) std::abort();
  for (size_t done = 0; done < size;) {
    ssize_t n = write(fd, data + done, size - done);
    if (n <= 0) std::abort();
    done += static_cast<size_t>(n);
  }
  lookup_lines(fd, probes);
  close(fd);
  return 0;
}
