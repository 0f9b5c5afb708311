// SymbolPreloader: the symbol tables of mapped DSOs load on a worker, before any lookup asks for
// them; where the file has a BUILD_ID list, a DSO it does not name (no sample is in it) is not
// loaded ahead, and those it names load from begin() on, before any process maps them (a load's
// warnings wait for the first map).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
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

void list_build_id(session::Machine& machine, const std::string& file, const std::vector<uint8_t>& id) {
  perfdata::BuildIdEntry entry;
  entry.filename = file;
  entry.build_id = id;
  machine.dsos().apply_build_ids({entry});
}

// The replay driver calls begin() before the first record: a DSO the list names loads then,
// while the kernel's symbols are read, not after the first kernel sample waited for those. Its
// first map (by this process, which sees the files this one sees) keeps what was loaded.
TEST(SymbolPreloader, LoadsTheListedDsosBeforeTheirFirstMap) {
  const std::optional<util::BuildId> id = util::read_build_id(kFile);
  ASSERT_TRUE(id.has_value()) << "the test program has no build id";
  session::Machine machine;
  list_build_id(machine, kFile, std::vector<uint8_t>(id->bytes.begin(), id->bytes.begin() + id->size));
  symbols::Symbolizer symbolizer(machine, {});
  const size_t empty = symbolizer.memory_bytes();
  analysis::SymbolPreloader preloader(machine, symbolizer);
  preloader.begin();
  preloader.wait();
  EXPECT_EQ(machine.dsos().find(kFile)->first_pid, -1);
  const size_t loaded = symbolizer.memory_bytes();
  EXPECT_GT(loaded, empty + 1000) << kFile << " is in the list, yet nothing was loaded before its first map";

  map_file(machine, ::getpid(), 0x100000);
  preloader.on_new_maps();
  preloader.wait();
  EXPECT_EQ(symbolizer.memory_bytes(), loaded) << "the first map loaded the symbols again";
  const session::Map* m =
      machine.find_map(&machine.findnew_thread(::getpid(), ::getpid()), perfdata::kMiscUser, 0x400000);
  ASSERT_NE(m, nullptr);
  EXPECT_NE(symbolizer.symbol_problem(*m, ::getpid()), "file not found");
}

// A listed DSO whose file is not there (its build id matches no file): the load ahead finds
// nothing, and says so only once a process mapped the DSO, as a load at that map would; a DSO
// never mapped says nothing.
TEST(SymbolPreloader, HoldsTheWarningsOfALoadAheadUntilTheFirstMap) {
  session::Machine machine;
  const std::string missing = "/nonexistent/tperf-preloader-test.so";
  list_build_id(machine, kFile, std::vector<uint8_t>(20, 0xab));
  list_build_id(machine, missing, std::vector<uint8_t>(20, 0xcd));
  symbols::Symbolizer symbolizer(machine, {});
  analysis::SymbolPreloader preloader(machine, symbolizer);
  preloader.begin();
  preloader.wait();
  EXPECT_EQ(symbolizer.take_warnings(), std::vector<std::string>()) << "a warning before any map";

  map_file(machine, ::getpid(), 0x100000);
  preloader.on_new_maps();
  preloader.wait();
  const std::vector<std::string> w = symbolizer.take_warnings();
  ASSERT_EQ(w.size(), 1u) << "the mapped DSO's missing file was not reported once";
  EXPECT_NE(w[0].find(kFile + ": no file with build-id abababab"), std::string::npos) << w[0];
  EXPECT_EQ(w[0].find(missing), std::string::npos) << "the DSO never mapped was reported: " << w[0];
}

}  // namespace
}  // namespace tperf::analysis
