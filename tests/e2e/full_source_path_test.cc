// --full-source-path against perf 6.1, byte for byte: source lines name the file by the path
// binutils' addr2line prints (a relative line-table name after the unit's compilation directory,
// as perf shows it) in report's srcline key, in chains keyed by address or srcline, and in
// script's srcline field and inline frames. On workloads built here from an absolute path, from
// a relative one, and with the compilation directory mapped to "." (as Debian builds its
// libraries: "./csu/../sysdeps/..." in glibc's frames of a --call-graph dwarf recording).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "e2e/recording_util.h"
#include "test_util.h"

namespace tperf::test::e2e {
namespace {

namespace fs = std::filesystem;

void expect_same(const std::string& path, const std::string& args, size_t min_lines) {
  const bool report = args.rfind("report", 0) == 0;
  const ComparedOutputs c = compare_outputs(
      fmt::format("perf {} --full-source-path -i {} 2>/dev/null{}", args, shell_quote(path),
                  report ? std::string(" | ") + kStripPerfTip : ""),
      fmt::format("{} {}{} --full-source-path -i {}", TPERF_BINARY, args, report ? " --no-unwind-summary" : "",
                  shell_quote(path)),
      path);
  expect_same_outputs(c, args + " --full-source-path", min_lines);
}

const char* const kCommands[] = {
    "report --stdio --no-children -s sym,srcline -g none",
    "report --stdio --no-children -g caller,address",
    "report --stdio --children -g caller,srcline",
    "script -F comm,tid,ip,sym,srcline",
};

// The spin workload's source copied under <scratch>/<dir>/src/, built from <scratch>/<dir> as
// "src/spin.c" with `flags`, and recorded with -g.
const Recording& relative_build(const std::string& dir, const std::string& flags) {
  static std::map<std::string, Recording> made;
  auto it = made.find(dir);
  if (it != made.end()) return it->second;
  Recording r;
  const std::string root = scratch_dir() + "/" + dir;
  fs::create_directories(root + "/src");
  fs::copy_file(std::string(TPERF_SOURCE_DIR) + "/tests/e2e/workloads/spin.c", root + "/src/spin.c",
                fs::copy_options::overwrite_existing);
  const CommandResult c = run(fmt::format("cd {} && gcc -O1 -g -fno-omit-frame-pointer -pthread {} -o spin src/spin.c",
                                          shell_quote(root), flags));
  if (c.status != 0) {
    r.error = "compiling src/spin.c failed: " + c.err;
  } else {
    const std::string path = root + "/spin.data";
    r = record_with_perf(fmt::format("timeout 60 perf record -q -e cpu-clock -c 200000 -g -o {} -- {}/spin 0.3",
                                     shell_quote(path), shell_quote(root)),
                         path);
  }
  return made.emplace(dir, r).first->second;
}

TEST(FullSourcePath, AbsoluteBuildEqualsPerf) {
  TPERF_REQUIRE_RECORDING(rec, workload_recording("fsp-abs", "spin", "-e cpu-clock -c 200000 -g"));
  for (const char* args : kCommands) expect_same(rec.path, args, 10);
}

TEST(FullSourcePath, RelativeBuildEqualsPerf) {
  TPERF_REQUIRE_RECORDING(rec, relative_build("fsp-rel", ""));
  for (const char* args : kCommands) expect_same(rec.path, args, 10);
  // The text is the compilation directory, then the name the compiler was given.
  const CommandResult r =
      run(fmt::format("{} script -F ip,srcline --full-source-path -i {}", TPERF_BINARY, shell_quote(rec.path)));
  EXPECT_NE(r.out.find(scratch_dir() + "/fsp-rel/src/spin.c:"), std::string::npos) << r.out.substr(0, 2000);
}

TEST(FullSourcePath, CompilationDirectoryMappedToDotEqualsPerf) {
  const std::string root = scratch_dir() + "/fsp-dot";
  TPERF_REQUIRE_RECORDING(rec, relative_build("fsp-dot", "-fdebug-prefix-map=" + root + "=."));
  for (const char* args : kCommands) expect_same(rec.path, args, 10);
  const CommandResult r =
      run(fmt::format("{} script -F ip,srcline --full-source-path -i {}", TPERF_BINARY, shell_quote(rec.path)));
  EXPECT_NE(r.out.find("./src/spin.c:"), std::string::npos) << r.out.substr(0, 2000);
}

TEST(FullSourcePath, DwarfRecordingWithInlineFramesEqualsPerf) {
  // glibc's frames (libc6-dbg): units compiled in "./csu", "./elf", names relative to them.
  TPERF_REQUIRE_RECORDING(rec, workload_recording("fsp-dwarf", "deep_nofp", "-e cpu-clock -c 200000 --call-graph dwarf,8192"));
  for (const char* args : kCommands) expect_same(rec.path, args, 10);
  expect_same(rec.path, "script -F comm,tid,ip,sym,dso,srcline --inline", 10);
}

}  // namespace
}  // namespace tperf::test::e2e
