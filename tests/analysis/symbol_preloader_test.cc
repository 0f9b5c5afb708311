// SymbolPreloader: the symbol tables of mapped DSOs load on a worker, before any lookup asks for
// them; a DSO known only from the BUILD_ID list waits until a process maps it, and where the file
// has that list, a DSO it does not name (no sample is in it) is not loaded ahead.
#include <gtest/gtest.h>

#include <filesystem>

#include "analysis/sample_path.h"
#include "perfdata/records.h"
#include "session/machine.h"
#include "symbols/symbolizer.h"
#include "util/build_id.h"

namespace tperf::analysis {
namespace {

// A file with a real symbol table: this test program.
const std::string kFile = "/proc/self/exe";

void map_file(session::Machine& machine, int32_t pid, uint64_t len, const std::string& file = kFile) {
  perfdata::MmapEvent e;
  e.pid = e.tid = pid;
  e.addr = 0x400000;
  e.len = len;
  e.filename = file;
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

// perf record lists the DSOs its samples hit in the BUILD_ID feature; the preloader, made after
// the machine took that list (make_replay_machine), loads ahead only the DSOs it names. The same
// ELF file under a name the list lacks stands for a DSO without samples.
TEST(SymbolPreloader, LoadsAheadOnlyTheDsosOfTheBuildIdList) {
  const std::optional<util::BuildId> id = util::read_build_id(kFile);
  ASSERT_TRUE(id.has_value()) << "the test program has no build id";
  const std::string other_name = std::filesystem::read_symlink(kFile).string();
  ASSERT_NE(other_name, kFile);
  session::Machine machine;
  perfdata::BuildIdEntry entry;
  entry.filename = kFile;
  entry.build_id.assign(id->bytes.begin(), id->bytes.begin() + id->size);
  machine.dsos().apply_build_ids({entry});
  symbols::Symbolizer symbolizer(machine, {});
  const size_t empty = symbolizer.memory_bytes();
  analysis::SymbolPreloader preloader(machine, symbolizer);

  map_file(machine, 4242, 0x100000, other_name);
  preloader.on_new_maps();
  preloader.wait();
  EXPECT_EQ(symbolizer.memory_bytes(), empty) << other_name << " is not in the list, yet its symbols were loaded";

  map_file(machine, 4243, 0x100000);
  preloader.on_new_maps();
  preloader.wait();
  EXPECT_GT(symbolizer.memory_bytes(), empty + 1000) << kFile << " is in the list, yet its symbols were not loaded";
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
