// `tperf diff` against `perf diff` (perf 6.1), line for line, on two recordings made here of a
// program before and after a change (diff_old.c, diff_new.c: one function's share drops, one
// function exists only in the new version). Both builds get the same file name so that their
// symbols pair, as they would for a rebuilt binary.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "e2e/recording_util.h"
#include "test_util.h"

namespace tperf {
namespace {

using test::shell_quote;
using test::e2e::Recording;
using test::e2e::run;

// The workload `name` compiled to <scratch>/<name>/diffprog and recorded for 0.5 s.
const Recording& recording(const std::string& name) {
  static std::map<std::string, Recording> made;
  if (auto it = made.find(name); it != made.end()) return it->second;
  Recording rec;
  const std::string dir = test::e2e::scratch_dir() + "/" + name;
  const std::string bin = dir + "/diffprog";
  // -fno-plt: no samples in .plt stubs, where perf 6.1 names a stub or the _init before it by
  // the shape of its symbol tree (a known difference, not what these tests are about).
  auto cc = run(fmt::format("mkdir -p {} && gcc -O1 -g -fno-omit-frame-pointer -fno-plt -o {} {}/tests/e2e/workloads/{}.c",
                            shell_quote(dir), shell_quote(bin), TPERF_SOURCE_DIR, name));
  if (cc.status != 0) {
    rec.error = "cannot build " + name + ": " + cc.err;
  } else {
    const std::string path = test::e2e::scratch_dir() + "/diff-" + name + ".data";
    rec = test::e2e::record_with_perf(
        fmt::format("timeout 60 perf record -q -N -e cpu-clock -o {} -- {} 0.5", shell_quote(path), shell_quote(bin)),
        path);
  }
  return made.emplace(name, rec).first->second;
}

// What a failed comparison keeps: both recordings and both builds of the program (the pair the
// regression corpus needs; the outputs alone did not tell why two _start entries differed).
std::vector<std::string> kept_on_failure(const Recording& old_rec, const Recording& new_rec) {
  const std::string& scratch = test::e2e::scratch_dir();
  return {old_rec.path, new_rec.path, scratch + "/diff_old", scratch + "/diff_new"};
}

#define EXPECT_SAME_DIFF(args, min_lines)                                                                  \
  do {                                                                                                     \
    auto c_ = test::e2e::compare_outputs(fmt::format("perf diff {} 2>/dev/null", args),                   \
                                         fmt::format("{} diff {}", TPERF_BINARY, args));                   \
    EXPECT_EQ(c_.diff, "") << "perf diff " << (args) << " vs tperf (diff perf tperf)";                     \
    EXPECT_GE(c_.perf_lines, size_t{min_lines}) << "perf printed too little";                              \
    EXPECT_EQ(c_.tperf_status, 0) << c_.tperf_err;                                                         \
  } while (0)

TEST(DiffE2e, OldAgainstNewAsPerfDiff) {
  TPERF_REQUIRE_RECORDING(old_rec, recording("diff_old"));
  TPERF_REQUIRE_RECORDING(new_rec, recording("diff_new"));
  test::e2e::KeepOnFailure keep(kept_on_failure(old_rec, new_rec));
  const std::string args = shell_quote(old_rec.path) + " " + shell_quote(new_rec.path);
  EXPECT_SAME_DIFF(args, 8);
  // The function only in the new build is there, without a baseline.
  auto out = run(fmt::format("{} diff {}", TPERF_BINARY, args));
  EXPECT_NE(out.out.find("[.] compress"), std::string::npos) << out.out;
}

TEST(DiffE2e, ComputeMethodsAndSortKeysAsPerfDiff) {
  TPERF_REQUIRE_RECORDING(old_rec, recording("diff_old"));
  TPERF_REQUIRE_RECORDING(new_rec, recording("diff_new"));
  test::e2e::KeepOnFailure keep(kept_on_failure(old_rec, new_rec));
  const std::string files = shell_quote(old_rec.path) + " " + shell_quote(new_rec.path);
  EXPECT_SAME_DIFF("-c delta " + files, 8);
  EXPECT_SAME_DIFF("-c ratio " + files, 8);
  EXPECT_SAME_DIFF("-c wdiff:1,2 " + files, 8);
  EXPECT_SAME_DIFF("-s sym " + files, 8);
  EXPECT_SAME_DIFF("-s comm,dso " + files, 6);
  // Three files: "# Data files" and one column per new file.
  EXPECT_SAME_DIFF(files + " " + shell_quote(old_rec.path), 10);
  // The same file twice: every delta is +0.00%.
  EXPECT_SAME_DIFF(shell_quote(old_rec.path) + " " + shell_quote(old_rec.path), 8);
}

TEST(DiffE2e, MissingFileIsAClearError) {
  const std::string missing = test::e2e::scratch_dir() + "/no-such.data";
  auto r = run(fmt::format("{} diff {} {}", TPERF_BINARY, shell_quote(missing), shell_quote(missing)));
  EXPECT_NE(r.status, 0);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("no-such.data"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("No such file"), std::string::npos) << r.err;
  auto bad = run(fmt::format("{} diff -c bogus {} {}", TPERF_BINARY, shell_quote(missing), shell_quote(missing)));
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.err.find("bogus"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace tperf
