// PLT entries of a binary with a .symtab and no .plt.sec: perf 6.1 synthesizes `name@plt` symbols
// for them after the fixups have stretched the size-less `_init` of .init over the whole .plt, so
// which of two overlapping symbols an address finds depends on the shape of perf's red-black
// tree (here: the first entry is `_init+N`, the others `name@plt`). A uprobe on every PLT entry of
// a workload gives samples at exactly those addresses; tperf must name each as perf does.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "e2e/recording_util.h"
#include "test_util.h"

namespace tperf::test::e2e {
namespace {

const std::string kTperf = TPERF_BINARY;

// The addresses of the `name@plt` entries objdump lists in .plt.
std::vector<std::string> plt_entries(const std::string& binary) {
  CommandResult r = run(fmt::format("objdump -d -j .plt {}", shell_quote(binary)));
  std::vector<std::string> out;
  static const std::regex kEntry(R"(^([0-9a-f]+) <[^>]+@plt>:$)");
  std::istringstream in(r.out);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_match(line, m, kEntry)) out.push_back(fmt::format("{:#x}", std::stoull(m[1].str(), nullptr, 16)));
  }
  return out;
}

// Removes the test's uprobes however the test ends.
struct ProbeGroup {
  std::string group;
  ~ProbeGroup() { run(fmt::format("perf probe -q -d '{}:*' 2>/dev/null", group)); }
};

TEST(PltSymbolsE2E, OverlappingInitAndPltNamedAsPerf) {
  TPERF_REQUIRE_PERF();
  ASSERT_EQ(ensure_tracefs(), "") << "set-up failed (uprobes need tracefs)";
  const std::string bin = scratch_dir() + "/pltcalls";
  const std::string src = std::string(TPERF_SOURCE_DIR) + "/tests/e2e/workloads/plt_calls.c";
  CommandResult cc = run(fmt::format("gcc -O0 -fno-builtin -o {} {}", shell_quote(bin), shell_quote(src)));
  ASSERT_EQ(cc.status, 0) << "set-up failed: " << cc.err;
  CommandResult sec = run(fmt::format("readelf -SW {}", shell_quote(bin)));
  ASSERT_EQ(sec.out.find(".plt.sec"), std::string::npos) << "the binary has a .plt.sec: not the case under test";

  const std::vector<std::string> entries = plt_entries(bin);
  ASSERT_GE(entries.size(), 40u) << "objdump lists too few PLT entries";
  // A probe group of this run's own, and event names too: perf refuses a name another group
  // has, and a test suite running beside this one (another build's) makes the same probes.
  ProbeGroup probes{fmt::format("tperf_plt_{}", ::getpid())};
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string& a = entries[i];
    CommandResult p = run(fmt::format("perf probe -q -x {} -a '{}:e{}_{}={}'", shell_quote(bin), probes.group, i,
                                      ::getpid(), a));
    ASSERT_EQ(p.status, 0) << "set-up failed: perf probe at " << a << ": " << p.err;
  }
  const std::string data = scratch_dir() + "/plt.data";
  KeepOnFailure keep({data, bin});
  CommandResult rec =
      run(fmt::format("perf record -q -o {} -e '{}:*' -- {} >/dev/null", shell_quote(data), probes.group, shell_quote(bin)));
  ASSERT_EQ(rec.status, 0) << "set-up failed: " << rec.err;

  for (const char* fields : {"-F ip,sym,dso", "-F ip,sym,symoff"}) {
    CommandResult p = run(fmt::format("perf script -i {} {}", shell_quote(data), fields));
    CommandResult t = run(fmt::format("{} script -i {} {}", kTperf, shell_quote(data), fields));
    ASSERT_EQ(p.status, 0) << p.err;
    ASSERT_EQ(t.status, 0) << t.err;
    EXPECT_EQ(t.out, p.out) << fields;
  }
  CommandResult p = run(fmt::format("perf script -i {} -F ip,sym", shell_quote(data)));
  std::set<std::string> names;
  std::istringstream in(p.out);
  for (std::string ip, sym; in >> ip >> sym;) names.insert(sym);
  // Both kinds of answer were compared: one entry found `_init`, the others their own names.
  EXPECT_GE(names.size(), entries.size() - 1) << p.out;
  EXPECT_TRUE(names.count("_init")) << p.out;
  EXPECT_TRUE(names.count("puts@plt")) << p.out;

  const std::string opts = "--stdio -n --sort sym,dso";
  CommandResult pr = run(fmt::format("perf report -i {} {} 2>/dev/null | grep -v '^#' | grep -v '^$' | sort", shell_quote(data), opts));
  CommandResult tr = run(fmt::format("{} report -i {} {} --no-unwind-summary | grep -v '^#' | grep -v '^$' | sort", kTperf,
                                     shell_quote(data), opts));
  EXPECT_FALSE(pr.out.empty());
  EXPECT_EQ(tr.out, pr.out);
}

}  // namespace
}  // namespace tperf::test::e2e
