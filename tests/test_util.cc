#include "test_util.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace tperf::test {

namespace {

// Each test process runs with an empty HOME of its own, removed when it exits. perf record copies
// every binary it recorded into $HOME/.debug, and perf and tperf both look binaries up there by
// build id; with the shared HOME, what one test's perf report printed depended on what the tests
// running beside it (ctest -j) had recorded: the same workload built in two scratch directories
// has one build id, so a recording whose binary was gone got its symbols back now and then. A
// user's ~/.perfconfig no longer reaches the comparisons either. TPERF_TEST_KEEP_HOME=1 keeps HOME.
class OwnHome {
 public:
  OwnHome() {
    const char* keep = std::getenv("TPERF_TEST_KEEP_HOME");
    if (keep != nullptr && std::string(keep) == "1") return;
    std::string templ = (std::filesystem::temp_directory_path() / "tperf-test-home-XXXXXX").string();
    if (mkdtemp(templ.data()) == nullptr) return;  // the tests that need a HOME fail and say so
    dir_ = templ;
    owner_ = getpid();
    setenv("HOME", dir_.c_str(), 1);
  }
  ~OwnHome() {
    // A forked child that exits runs this too; only the process that made the directory removes it.
    if (dir_.empty() || getpid() != owner_) return;
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  OwnHome(const OwnHome&) = delete;
  OwnHome& operator=(const OwnHome&) = delete;

 private:
  std::string dir_;
  pid_t owner_ = 0;
};

const OwnHome own_home;

}  // namespace

std::string run_command(const std::string& cmd, int* status) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) {
    if (status) *status = -1;
    return out;
  }
  std::array<char, 65536> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  int rc = pclose(p);
  if (status) *status = (rc != -1 && WIFEXITED(rc)) ? WEXITSTATUS(rc) : -1;
  return out;
}

std::string corpus_dir() { return std::string(TPERF_SOURCE_DIR) + "/../shared/corpus"; }

bool have_program(const std::string& name) {
  int status = 0;
  run_command("command -v " + shell_quote(name) + " >/dev/null 2>&1", &status);
  return status == 0;
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') {
      q += "'\\''";
    } else {
      q += c;
    }
  }
  q += "'";
  return q;
}

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "tperf-test-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

const std::vector<std::string>& corpus_files_perf_reads() {
  static const std::vector<std::string> files = {
      "quipper/testdata/perf.data.armv7-3.4",
      "quipper/testdata/perf.data.branch-4.14",
      "quipper/testdata/perf.data.callgraph-3.8",
      "quipper/testdata/perf.data.ctx_switch_namespaces-4.14",
      "quipper/testdata/perf.data.forkexit-3.8",
      "quipper/testdata/perf.data.group_desc-4.14",
      "quipper/testdata/perf.data.hybrid_topology",
      "quipper/testdata/perf.data.i686-3.4",
      "quipper/testdata/perf.data.intel_pt-4.14",
      "quipper/testdata/perf.data.lost_samples-4.4",
      "quipper/testdata/perf.data.piped.header_features_aligned-6.12",
      "quipper/testdata/perf.data.piped.header_feautres_group_desc-6.8",
      "quipper/testdata/perf.data.piped.target-3.8",
      "quipper/testdata/perf.data.singleprocess-3.8",
      "linux-perf-data/sleep.compressed.pipe.data",
  };
  return files;
}

const std::vector<std::string>& corpus_files_perf_refuses() {
  static const std::vector<std::string> files = {
      "linux-perf-data/fibo.compressed2.pipe.data", "linux-perf-data/sleep.compressed.data",
      "linux-perf-data/sleep.compressed2.data",     "linux-perf-data/sleep.compressed2.pipe.data",
      "linux-perf-data/sleep.data",
  };
  return files;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

perfdata::PerfEventAttr cpu_clock_attr(uint64_t sample_type, uint64_t period) {
  using namespace perfdata;
  PerfEventAttr a;
  a.type = kTypeSoftware;
  a.size = kAttrSizeVer7;
  a.config = kSwCpuClock;
  a.sample_period = period;
  a.sample_type = sample_type;
  for (AttrFlagBit f : {kFlagSampleIdAll, kFlagMmap, kFlagComm, kFlagTask, kFlagMmap2, kFlagCommExec}) a.set_flag(f);
  return a;
}

perfdata::Mmap2Event executable_map(int32_t pid, uint64_t addr, const std::string& path) {
  perfdata::Mmap2Event m;
  m.pid = m.tid = pid;
  m.addr = addr;
  m.len = 0x10000;
  m.prot = 5;
  m.filename = path;
  return m;
}

bool page_mapped(const void* p) {
  const auto page = reinterpret_cast<uintptr_t>(p) & ~static_cast<uintptr_t>(sysconf(_SC_PAGESIZE) - 1);
  unsigned char in_core = 0;
  return mincore(reinterpret_cast<void*>(page), 1, &in_core) == 0;
}

}  // namespace tperf::test
