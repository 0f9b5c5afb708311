// SymbolPreloader: the symbol tables of mapped DSOs load on a worker, before any lookup asks for
// them; a DSO known only from the BUILD_ID list waits until a process maps it.
#include <gtest/gtest.h>

#include "analysis/sample_path.h"
#include "perfdata/records.h"
#include "session/machine.h"
#include "symbols/symbolizer.h"

namespace tperf::analysis {
namespace {

// A file with a real symbol table: this test program.
const std::string kFile = "/proc/self/exe";

void map_file(session::Machine& machine, int32_t pid, uint64_t len) {
  perfdata::MmapEvent e;
  e.pid = e.tid = pid;
  e.addr = 0x400000;
  e.len = len;
  e.filename = kFile;
  machine.on_mmap(e);
}

TEST(SymbolPreloader, LoadsMappedDsosWithoutALookup) {
  session::Machine machine;
  symbols::Symbolizer symbolizer(machine, {});
  const size_t empty = symbolizer.memory_bytes();
  {
    analysis::SymbolPreloader preloader(machine, symbolizer);
    map_file(machine, 4242, 0x100000);
    preloader.on_new_maps();
  }  // the preloader's worker has finished
  EXPECT_GT(symbolizer.memory_bytes(), empty + 1000) << "the mapped file's symbols were not loaded";
}

TEST(SymbolPreloader, WaitsForTheFirstMapOfABuildIdOnlyDso) {
  session::Machine machine;
  symbols::Symbolizer symbolizer(machine, {});
  analysis::SymbolPreloader preloader(machine, symbolizer);
  perfdata::BuildIdEntry entry;
  entry.filename = kFile;
  entry.build_id.assign(20, 0xab);
  machine.dsos().apply_build_ids({entry});
  preloader.on_new_maps();  // known, not mapped: its process (and mount namespace) is unknown
  EXPECT_EQ(machine.dsos().find(kFile)->first_pid, -1);
  map_file(machine, 77, 0x1000);
  EXPECT_EQ(machine.dsos().find(kFile)->first_pid, 77);
  preloader.on_new_maps();
}

}  // namespace
}  // namespace tperf::analysis
