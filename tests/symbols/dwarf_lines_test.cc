// Source lines from DWARF against binutils' addr2line, which perf 6.1 runs and whose answers
// perf's srclines are: on glibc's dynamic loader, whose debug file (libc6-dbg, found by build id)
// has DWARF 5 line tables where the two readers could part ways (a sequence that never sets its
// file, code of top-level asm inside a unit without rows of its own). Every function symbol of
// the file, at a few offsets, is looked up by both.
#include "symbols/dwarf_lines.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace tperf::symbols {
namespace {

std::string sh(const std::string& cmd) { return test::run_command(cmd); }

std::string basename_of(const std::string& p) { return p.substr(p.rfind('/') + 1); }

// What perf prints for addr2line's "FILE:LINE" answer ("" for none, as perf then prints nothing).
std::string perf_srcline(std::string loc) {
  loc = loc.substr(0, loc.find(" (discriminator"));
  const size_t colon = loc.rfind(':');
  if (colon == std::string::npos) return "";
  std::string file = loc.substr(0, colon), line = loc.substr(colon + 1);
  if (file == "??") return "";
  return fmt::format("{}:{}", basename_of(file), std::strtoul(line.c_str(), nullptr, 10));
}

// The debug file of a system library, found by the build id of `lib` (libc6-dbg); "" when missing.
std::string debug_file_of(const std::string& lib) {
  std::string id = sh(fmt::format("readelf -n {} 2>/dev/null | awk '/Build ID/ {{print $3}}'", lib));
  while (!id.empty() && id.back() == '\n') id.pop_back();
  if (id.size() < 3) return "";
  const std::string debug = fmt::format("/usr/lib/debug/.build-id/{}/{}.debug", id.substr(0, 2), id.substr(2));
  return sh("test -r " + debug + " && echo yes").empty() ? "" : debug;
}

// A copy of `debug` with its .debug_* sections uncompressed (binutils' objcopy), as tperf's debug
// cache keeps them, in `dir`.
std::string uncompressed_copy(const std::string& debug, test::TempDir& dir, const std::string& name) {
  const std::string out = dir.file(name);
  int status = 0;
  test::run_command(fmt::format("objcopy --decompress-debug-sections {} {} 2>&1", debug, out), &status);
  return status == 0 ? out : "";
}

// libc's debug file (libc6-dbg), uncompressed into `dir` as tperf's debug cache keeps it: `path`;
// or `skip`, why this machine cannot give it (no objcopy, no debug file); or `error`, objcopy's
// failure, which fails the test.
struct LibcDebugCopy {
  std::string path, skip, error;
};
LibcDebugCopy libc_debug_copy(test::TempDir& dir) {
  LibcDebugCopy out;
  if (!test::have_program("objcopy")) {
    out.skip = "no binutils";
    return out;
  }
  const std::string debug = debug_file_of("/usr/lib/x86_64-linux-gnu/libc.so.6");
  if (debug.empty()) {
    out.skip = "no debug file of libc (libc6-dbg)";
    return out;
  }
  out.path = uncompressed_copy(debug, dir, "libc.debug");
  if (out.path.empty()) out.error = "objcopy --decompress-debug-sections failed on " + debug;
  return out;
}

// Every function symbol of `debug` (nm: "ADDR t name"), at offsets 0, 3 and 11, looked up by
// DwarfLines and by binutils' addr2line.
void expect_lines_as_addr2line(const std::string& debug, size_t min_addrs) {
  std::vector<uint64_t> addrs;
  std::istringstream syms(sh(fmt::format("nm --defined-only {} | awk '$2 ~ /^[tT]$/ {{print $1}}' | sort -u", debug)));
  for (std::string hex; syms >> hex;) {
    const uint64_t a = std::stoull(hex, nullptr, 16);
    for (uint64_t off : {0, 3, 11}) addrs.push_back(a + off);
  }
  ASSERT_GT(addrs.size(), min_addrs);
  std::string list;
  for (uint64_t a : addrs) list += fmt::format("{:#x}\n", a);
  test::TempDir tmp;
  const std::string path = tmp.file("addrs.txt");
  {
    FILE* f = fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    fputs(list.c_str(), f);
    fclose(f);
  }
  // One line per address: addr2line -e FILE < addresses prints "FILE:LINE" for each.
  std::istringstream answers(sh(fmt::format("addr2line -e {} < {}", debug, path)));
  std::string error;
  auto lines = DwarfLines::open(debug, &error);
  ASSERT_TRUE(lines) << error;
  size_t compared = 0, named = 0, differ = 0, unit_without_row = 0;
  for (uint64_t a : addrs) {
    std::string answer;
    ASSERT_TRUE(std::getline(answers, answer)) << "addr2line stopped at " << compared;
    const std::string expected = perf_srcline(answer);
    std::vector<SourceFrame> frames;
    std::string ours;
    if (lines->lookup(a, false, &frames) && !frames.empty()) {
      if (!frames[0].file.empty()) {
        ours = fmt::format("{}:{}", basename_of(frames[0].file), frames[0].line);
      } else if (frames[0].unit_without_row) {
        ours = ":0";
      }
    }
    ++compared;
    if (!expected.empty()) ++named;
    if (ours == expected) continue;
    // Known: where no row covers an address, binutils names the unit's file, an empty file or
    // nothing, by rules not all worked out: tperf says ":0" inside .debug_aranges' ranges (the
    // loader's _dl_start_user, in every startup callchain) and nothing outside them (a program's
    // _start), which leaves a few cold function parts.
    if ((ours == ":0" || ours.empty()) && answer.ends_with(":?")) {
      ++unit_without_row;
      continue;
    }
    if (++differ <= 10) ADD_FAILURE() << fmt::format("{} {:#x}: addr2line {}, tperf {}", debug, a, answer, ours);
  }
  EXPECT_EQ(differ, 0u) << "of " << compared;
  EXPECT_GT(named, compared / 2);
  EXPECT_LT(unit_without_row, compared / 50) << "addresses inside a unit but without a row";
}

// As installed, the loader's debug file has compressed sections; tperf's debug cache keeps an
// uncompressed copy, which DwarfLines reads through its own index of .debug_aranges.
TEST(DwarfLines, GlibcLoaderLinesEqualBinutilsAddr2line) {
  if (!test::have_program("addr2line") || !test::have_program("objcopy")) GTEST_SKIP() << "no binutils";
  const std::string debug = debug_file_of("/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2");
  if (debug.empty()) GTEST_SKIP() << "no debug file of the loader (libc6-dbg)";
  expect_lines_as_addr2line(debug, 300);
  test::TempDir dir;
  const std::string copy = uncompressed_copy(debug, dir, "ld.debug");
  ASSERT_FALSE(copy.empty()) << "objcopy --decompress-debug-sections failed on " << debug;
  expect_lines_as_addr2line(copy, 300);
}

// libc's (uncompressed) debug file against addr2line. Its line tables hold what the loader's do
// not: units with more than one sequence, where a sequence that ends with a row at its end
// address leaves that row after the end row in libdw's order (strtod_l.c's rows named by entry 0
// and the row past canonicalize_file_name's end were 32 differences before trails_ended_sequence).
TEST(DwarfLines, GlibcLinesEqualBinutilsAddr2line) {
  if (!test::have_program("addr2line")) GTEST_SKIP() << "no binutils";
  test::TempDir dir;
  const LibcDebugCopy libc = libc_debug_copy(dir);
  if (!libc.skip.empty()) GTEST_SKIP() << libc.skip;
  ASSERT_TRUE(libc.error.empty()) << libc.error;
  expect_lines_as_addr2line(libc.path, 3000);
}

// libc's debug file (4126 units): every function symbol at offsets 0, 3 and 11, with inline
// chains, answered through DwarfLines' own index of .debug_aranges exactly as through libdwfl's
// unit lookup.
TEST(DwarfLines, GlibcUnitIndexAnswersAsLibdwfl) {
  if (!test::have_program("nm")) GTEST_SKIP() << "no binutils";
  test::TempDir dir;
  const LibcDebugCopy libc = libc_debug_copy(dir);
  if (!libc.skip.empty()) GTEST_SKIP() << libc.skip;
  ASSERT_TRUE(libc.error.empty()) << libc.error;
  const std::string& copy = libc.path;
  std::vector<uint64_t> addrs;
  std::istringstream syms(sh(fmt::format("nm --defined-only {} | awk '$2 ~ /^[tT]$/ {{print $1}}' | sort -u", copy)));
  for (std::string hex; syms >> hex;) {
    const uint64_t a = std::stoull(hex, nullptr, 16);
    for (uint64_t off : {0, 3, 11}) addrs.push_back(a + off);
  }
  ASSERT_GT(addrs.size(), 3000u);
  // Also addresses between and after the units' ranges, and before the first.
  for (uint64_t a = 0; a < 0x200000; a += 0x1003) addrs.push_back(a);
  auto own = DwarfLines::open(copy, nullptr, DwarfLines::UnitLookup::kOwnIndex);
  auto dwfl = DwarfLines::open(copy, nullptr, DwarfLines::UnitLookup::kLibdwfl);
  ASSERT_TRUE(own && dwfl);
  auto text = [](bool found, const std::vector<SourceFrame>& frames) {
    std::string t = found ? "found" : "none";
    for (const SourceFrame& f : frames) {
      t += fmt::format(" | {} {}:{}{}", f.function, f.file, f.line, f.unit_without_row ? " (unit, no row)" : "");
    }
    return t;
  };
  size_t differ = 0, found = 0, inlined = 0;
  for (uint64_t a : addrs) {
    for (bool with_inlines : {false, true}) {
      std::vector<SourceFrame> fo, fd;
      const bool ko = own->lookup(a, with_inlines, &fo);
      const bool kd = dwfl->lookup(a, with_inlines, &fd);
      const std::string to = text(ko, fo), td = text(kd, fd);
      if (ko) ++found;
      if (fo.size() > 1) ++inlined;
      if (to != td && ++differ <= 10) {
        ADD_FAILURE() << fmt::format("{:#x} (inlines {}): libdwfl {}; own index {}", a, with_inlines, td, to);
      }
    }
  }
  EXPECT_EQ(differ, 0u) << "of " << 2 * addrs.size();
  EXPECT_GT(found, addrs.size()) << "lookups that found a line";
  EXPECT_GT(inlined, 100u) << "lookups with inline frames";
}

// A program's _start (from crt1.o, no DWARF of its own) lies outside every unit: no source line,
// as binutils says ("??:?"), though libdwfl's unit lookup answers for it.
TEST(DwarfLines, StartOfAProgramHasNoLine) {
  if (!test::have_program("addr2line") || !test::have_program("gcc")) GTEST_SKIP() << "no gcc or addr2line";
  test::TempDir tmp;
  const std::string src = tmp.file("p.c"), bin = tmp.file("p");
  {
    FILE* f = fopen(src.c_str(), "w");
    ASSERT_NE(f, nullptr);
    fputs("int work(int n) { int s = 0; for (int i = 0; i < n; i++) s += i * i; return s; }\n"
          "int main(int argc, char** argv) { return work(argc * 1000) & 1; }\n", f);
    fclose(f);
  }
  int status = 0;
  test::run_command(fmt::format("gcc -O1 -g -o {} {} 2>&1", bin, src), &status);
  ASSERT_EQ(status, 0);
  std::string hex = sh(fmt::format("nm {} | awk '$3 == \"_start\" {{print $1}}'", bin));
  ASSERT_FALSE(hex.empty());
  const uint64_t start = std::stoull(hex, nullptr, 16);
  std::string answer = sh(fmt::format("addr2line -e {} {:#x}", bin, start));
  while (!answer.empty() && answer.back() == '\n') answer.pop_back();
  EXPECT_EQ(perf_srcline(answer), "") << answer;
  auto lines = DwarfLines::open(bin);
  ASSERT_TRUE(lines);
  std::vector<SourceFrame> frames;
  const bool found = lines->lookup(start, false, &frames);
  EXPECT_TRUE(!found || frames.empty() || (frames[0].file.empty() && !frames[0].unit_without_row));
  // and a line inside main's unit is found, as addr2line finds it
  hex = sh(fmt::format("nm {} | awk '$3 == \"work\" {{print $1}}'", bin));
  const uint64_t work = std::stoull(hex, nullptr, 16);
  answer = sh(fmt::format("addr2line -e {} {:#x}", bin, work));
  while (!answer.empty() && answer.back() == '\n') answer.pop_back();
  ASSERT_TRUE(lines->lookup(work, false, &frames));
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(fmt::format("{}:{}", basename_of(frames[0].file), frames[0].line), perf_srcline(answer));
}

}  // namespace
}  // namespace tperf::symbols
