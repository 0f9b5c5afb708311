// Helpers shared by the tests: run a shell command and capture its output, find the corpus.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "perfdata/attr.h"
#include "perfdata/records.h"

namespace tperf::test {

// Runs `cmd` with /bin/sh, returns its standard output; `status` (if given) receives the exit
// status (-1 when the command could not be started or was killed by a signal).
std::string run_command(const std::string& cmd, int* status = nullptr);

// shared/corpus next to the source tree. Tests that need it fail without it (TPERF_REQUIRE_CORPUS):
// a missing corpus is a set-up failure, not a reason to check nothing.
std::string corpus_dir();

// The corpus files perf 6.1 reads to the end (relative to corpus_dir()); its output on them is
// the oracle of the tests that compare with perf.
const std::vector<std::string>& corpus_files_perf_reads();
// Corpus files perf 6.1 refuses ("incompatible file format": 136-byte attrs in file mode,
// COMPRESSED in file mode) or misreads (COMPRESSED2 in a pipe) but tperf reads.
const std::vector<std::string>& corpus_files_perf_refuses();

// The whole content of a file ("" when it cannot be read).
std::string read_file(const std::string& path);

// True when `name` is an executable found in PATH.
bool have_program(const std::string& name);

// Set-up checks: a missing tool or corpus fails the test (scripts/setup.sh installs the tools),
// with the reason; only a capability the machine legitimately lacks is a skip
// (tests/skip-allowlist.txt lists those).
#define TPERF_REQUIRE_PROGRAM(name)                   \
  ASSERT_TRUE(::tperf::test::have_program(name))      \
      << "set-up failed: " << (name) << " is not in PATH (scripts/setup.sh installs it)"
#define TPERF_REQUIRE_CORPUS()                                                                       \
  ASSERT_TRUE(std::filesystem::is_directory(::tperf::test::corpus_dir()))                           \
      << "set-up failed: no corpus at " << ::tperf::test::corpus_dir()

// Quotes a string for /bin/sh.
std::string shell_quote(const std::string& s);

// A fresh directory under $TMPDIR, removed with everything in it when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// The attr of `perf record -e cpu-clock -c PERIOD` with these sample fields, for files made with
// our writer: software cpu-clock, attr size 7, sample_id_all and the task/comm/mmap2 sideband.
perfdata::PerfEventAttr cpu_clock_attr(uint64_t sample_type, uint64_t period = 100000);

// An MMAP2 of 64 KiB of `path` at `addr`, read and execute, in process `pid` (its main thread).
perfdata::Mmap2Event executable_map(int32_t pid, uint64_t addr, const std::string& path);

// Whether the page that holds `p` is mapped (mincore fails with ENOMEM on a page that is not).
bool page_mapped(const void* p);

}  // namespace tperf::test
