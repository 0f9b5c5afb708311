// Uncompressed copies of compressed debug files (symbols/debug_cache.h) against binutils: every
// section of the copy holds the bytes `objcopy --decompress-debug-sections` gives for it, and the
// copy answers source-line and inline questions as the original does. The file is glibc's
// dynamic loader's debug file from libc6-dbg (zlib-compressed DWARF 5), found by build id.
#include "symbols/debug_cache.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "symbols/dwarf_lines.h"
#include "test_util.h"

namespace tperf::symbols {
namespace {

std::string sh(const std::string& cmd) { return test::run_command(cmd); }

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// How many sections readelf flags C (compressed).
int compressed_sections(const std::string& path) {
  return std::stoi(sh(fmt::format(
      "readelf -S -W {} 2>/dev/null | grep '^ *\\[' | awk '{{for (i = 3; i <= NF; i++) if ($i ~ /^[WAXMSILOGTCxoEDlp]+$/ && "
      "$i ~ /C/) {{n++; break}}}} END {{print n + 0}}'",
      path)));
}

// The loader's debug file and its build id; fails the test when libc6-dbg is not installed.
struct DebugFile {
  std::string path, build_id;
};

DebugFile loader_debug_file() {
  const std::string ld = "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2";
  DebugFile f;
  f.build_id = trimmed(sh(fmt::format("readelf -n {} 2>/dev/null | awk '/Build ID/ {{print $3}}'", ld)));
  if (f.build_id.size() > 2) {
    f.path = fmt::format("/usr/lib/debug/.build-id/{}/{}.debug", f.build_id.substr(0, 2), f.build_id.substr(2));
  }
  return f;
}

#define REQUIRE_LOADER_DEBUG_FILE(var)                                                                    \
  TPERF_REQUIRE_PROGRAM("objcopy");                                                                     \
  const DebugFile var = loader_debug_file();                                                            \
  ASSERT_FALSE(var.path.empty()) << "set-up failed: no build id on the dynamic loader";                \
  ASSERT_FALSE(sh("test -r " + var.path + " && echo yes").empty())                                     \
      << "set-up failed: no " << var.path << " (libc6-dbg; scripts/setup.sh installs it)";             \
  ASSERT_GT(compressed_sections(var.path), 3) << "set-up failed: nothing compressed in " << var.path

std::vector<std::string> section_names(const std::string& path) {
  // readelf -S -W: "  [Nr] Name Type ...", the name the second field after "]".
  std::istringstream in(sh(fmt::format("readelf -S -W {} 2>/dev/null | sed -n 's/^ *\\[ *[0-9]*\\] *\\([^ ]*\\) .*/\\1/p'", path)));
  std::vector<std::string> names;
  for (std::string n; in >> n;) {
    if (!n.empty() && n != "NULL") names.push_back(n);
  }
  return names;
}

std::string section_bytes(const std::string& file, const std::string& section, const test::TempDir& tmp) {
  const std::string out = tmp.file("section.bin");
  sh(fmt::format("rm -f {0}; objcopy -O binary --only-section={1} {2} {0} 2>/dev/null", out, section, file));
  std::ifstream in(out, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(DebugCache, CopyHoldsTheSectionsObjcopyInflates) {
  REQUIRE_LOADER_DEBUG_FILE(dbg);
  test::TempDir tmp;
  const UncompressedCopy c = uncompressed_copy(dbg.path, tmp.file("cache"));
  ASSERT_EQ(c.error, "");
  ASSERT_TRUE(c.made);
  EXPECT_EQ(c.path, tmp.file("cache") + "/debug/" + dbg.build_id + ".debug");

  const std::string inflated = tmp.file("objcopy.debug");
  ASSERT_EQ(sh(fmt::format("objcopy --decompress-debug-sections {} {} 2>&1", dbg.path, inflated)), "");
  // The same sections in the same order, none compressed, the same build id.
  const auto names = section_names(inflated);
  ASSERT_GT(names.size(), 10u);
  EXPECT_EQ(section_names(c.path), names);
  EXPECT_EQ(compressed_sections(c.path), 0);
  EXPECT_NE(sh("readelf -n " + c.path).find(dbg.build_id), std::string::npos);
  size_t debug_sections = 0;
  for (const std::string& name : names) {
    if (name.rfind(".debug_", 0) == 0) ++debug_sections;
    EXPECT_EQ(section_bytes(c.path, name, tmp), section_bytes(inflated, name, tmp)) << name;
  }
  EXPECT_GE(debug_sections, 6u);
}

TEST(DebugCache, CopyAnswersLinesAndInlinesAsTheOriginal) {
  REQUIRE_LOADER_DEBUG_FILE(dbg);
  test::TempDir tmp;
  const UncompressedCopy c = uncompressed_copy(dbg.path, tmp.path());
  ASSERT_EQ(c.error, "");
  auto original = DwarfLines::open(dbg.path);
  auto copy = DwarfLines::open(c.path);
  ASSERT_TRUE(original && copy);
  // Function symbols (nm: "ADDR t name") and a few bytes into each.
  std::istringstream syms(sh(fmt::format("nm --defined-only {} | awk '$2 ~ /^[tT]$/ {{print $1}}' | sort -u", dbg.path)));
  size_t compared = 0, with_lines = 0;
  for (std::string hex; syms >> hex;) {
    for (uint64_t off : {0, 5}) {
      const uint64_t a = std::stoull(hex, nullptr, 16) + off;
      std::vector<SourceFrame> want, got;
      const bool ok_want = original->lookup(a, true, &want);
      EXPECT_EQ(copy->lookup(a, true, &got), ok_want) << std::hex << a;
      ASSERT_EQ(got.size(), want.size()) << std::hex << a;
      for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(got[i].file, want[i].file) << std::hex << a;
        EXPECT_EQ(got[i].line, want[i].line) << std::hex << a;
        EXPECT_EQ(got[i].function, want[i].function) << std::hex << a;
      }
      ++compared;
      if (!want.empty() && want[0].line) ++with_lines;
    }
  }
  EXPECT_GT(compared, 300u);
  EXPECT_GT(with_lines, 200u);
}

TEST(DebugCache, ACopyIsMadeOnceThenReadAndABadOneIsMadeAgain) {
  REQUIRE_LOADER_DEBUG_FILE(dbg);
  test::TempDir tmp;
  const UncompressedCopy first = uncompressed_copy(dbg.path, tmp.path());
  ASSERT_TRUE(first.made) << first.error;
  struct stat st0;
  ASSERT_EQ(stat(first.path.c_str(), &st0), 0);
  const UncompressedCopy again = uncompressed_copy(dbg.path, tmp.path());
  EXPECT_EQ(again.path, first.path);
  EXPECT_FALSE(again.made);
  // Cut short (a full disk, say, though the copy is renamed into place only when whole), or
  // another file under the name: made again.
  for (const std::string& damage : {fmt::format("truncate -s 4096 {}", first.path),
                                    fmt::format("cp /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 {}", first.path),
                                    fmt::format("cp {} {}", dbg.path, first.path)}) {
    SCOPED_TRACE(damage);
    sh(damage);
    const UncompressedCopy redone = uncompressed_copy(dbg.path, tmp.path());
    EXPECT_TRUE(redone.made) << redone.error;
    EXPECT_EQ(redone.path, first.path);
    struct stat st;
    ASSERT_EQ(stat(redone.path.c_str(), &st), 0);
    EXPECT_EQ(st.st_size, st0.st_size);
  }
  // No temporary file is left behind.
  EXPECT_EQ(trimmed(sh(fmt::format("ls -A {}/debug | wc -l", tmp.path()))), "1");
}

TEST(DebugCache, NoCopyWhereNoneIsWantedOrNoneCanBeMade) {
  REQUIRE_LOADER_DEBUG_FILE(dbg);
  test::TempDir tmp;
  // Cache off.
  UncompressedCopy off = uncompressed_copy(dbg.path, "");
  EXPECT_EQ(off.path, "");
  EXPECT_EQ(off.error, "");
  // Nothing compressed: the loader itself, and a copy.
  const UncompressedCopy plain = uncompressed_copy("/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", tmp.path());
  EXPECT_EQ(plain.path, "");
  EXPECT_EQ(plain.error, "");
  // Not ELF, not there.
  sh("echo text > " + tmp.file("not-elf"));
  EXPECT_EQ(uncompressed_copy(tmp.file("not-elf"), tmp.path()).path, "");
  EXPECT_EQ(uncompressed_copy(tmp.file("missing"), tmp.path()).path, "");
  // A cache directory that cannot be made (a file is in the way): no copy, and why.
  sh("touch " + tmp.file("blocked"));
  const UncompressedCopy blocked = uncompressed_copy(dbg.path, tmp.file("blocked"));
  EXPECT_EQ(blocked.path, "");
  EXPECT_NE(blocked.error.find(tmp.file("blocked")), std::string::npos) << blocked.error;
}

TEST(DebugCache, DefaultDirectoryFollowsTheEnvironment) {
  const char* saved[3] = {std::getenv("TPERF_CACHE_DIR"), std::getenv("XDG_CACHE_HOME"), std::getenv("HOME")};
  const std::string keep[3] = {saved[0] ? saved[0] : "", saved[1] ? saved[1] : "", saved[2] ? saved[2] : ""};
  unsetenv("TPERF_CACHE_DIR");
  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", "/home/someone", 1);
  EXPECT_EQ(default_cache_dir(), "/home/someone/.cache/tperf");
  setenv("XDG_CACHE_HOME", "/var/cache/x", 1);
  EXPECT_EQ(default_cache_dir(), "/var/cache/x/tperf");
  setenv("XDG_CACHE_HOME", "relative", 1);  // the XDG spec: relative paths are to be ignored
  EXPECT_EQ(default_cache_dir(), "/home/someone/.cache/tperf");
  setenv("TPERF_CACHE_DIR", "/elsewhere", 1);
  EXPECT_EQ(default_cache_dir(), "/elsewhere");
  setenv("TPERF_CACHE_DIR", "", 1);
  EXPECT_EQ(default_cache_dir(), "");
  const char* names[3] = {"TPERF_CACHE_DIR", "XDG_CACHE_HOME", "HOME"};
  for (int i = 0; i < 3; ++i) {
    if (saved[i]) {
      setenv(names[i], keep[i].c_str(), 1);
    } else {
      unsetenv(names[i]);
    }
  }
}

}  // namespace
}  // namespace tperf::symbols
