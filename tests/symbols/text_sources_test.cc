// The text symbol sources: kallsyms (types kept, module split, KASLR delta, hidden addresses) and
// perf-PID.map JIT files.
#include <gtest/gtest.h>

#include <cerrno>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "symbols/jit_map.h"
#include "symbols/kallsyms.h"
#include "test_util.h"
#include "util/file_buffer.h"

namespace tperf::symbols {
namespace {

constexpr const char* kKallsyms =
    "ffffffff81000000 T _text\n"
    "ffffffff81000000 T _stext\n"
    "ffffffff81000100 t helper\n"
    "ffffffff81000180 r ro_data_not_kept\n"
    "ffffffff81000200 T last_kernel\n"
    "ffffffffc0000000 t mod_fn\t[mymod]\n"
    "ffffffffc0000040 t mod_fn2\t[mymod]\n";

TEST(Kallsyms, SplitsKernelAndModulesAndAppliesTheDelta) {
  std::string error;
  // The recording saw _text at 0xffffffff91000000: everything moves by 0x10000000.
  auto k = parse_kallsyms(kKallsyms, "_text", 0xffffffff91000000, &error);
  ASSERT_TRUE(k) << error;
  EXPECT_EQ(k->delta, 0xffffffff81000000 - 0xffffffff91000000);
  const Symbol* s = k->kernel.find(0xffffffff91000150);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->name(), "helper");  // "r" symbols are not kept, so helper reaches last_kernel
  EXPECT_EQ(k->kernel.find(0xffffffff91000190)->name(), "helper");
  // The last kernel symbol before the modules ends at the page after it.
  EXPECT_EQ(k->kernel.find(0xffffffff91001fff)->name(), "last_kernel");
  EXPECT_EQ(k->kernel.find(0xffffffff91002000), nullptr);
  ASSERT_EQ(k->modules.count("mymod"), 1u);
  EXPECT_EQ(k->modules.at("mymod").find(0xffffffffc0000010)->name(), "mod_fn");
}

TEST(Kallsyms, HiddenAddressesAreAnError) {
  std::string error;
  EXPECT_FALSE(parse_kallsyms("0000000000000000 T _text\n0000000000000000 T foo\n", "_text", 0, &error));
  EXPECT_NE(error.find("kptr_restrict"), std::string::npos);
  EXPECT_FALSE(parse_kallsyms("", "_text", 0, &error));
}

// A snapshot of this machine's /proc/kallsyms (120,000 lines, modules at the end), read in pieces
// and parsed as they come (read_kallsyms, and pieces of 4 KiB, which cut lines near every
// boundary) gives the tables one read parsed whole gives; and every text symbol of the snapshot
// outside the modules is found at its own address.
TEST(Kallsyms, PiecesParseAsTheWholeText) {
  test::TempDir dir;
  const std::string copy = dir.file("kallsyms");
  ASSERT_EQ(test::run_command("cat /proc/kallsyms > " + copy + " && echo ok"), "ok\n");
  auto text = util::FileBuffer::read(copy);
  ASSERT_TRUE(text);
  const std::string snapshot(text->view());
  std::string error;
  auto whole = parse_kallsyms(std::move(*text), "_text", 0, &error);
  ASSERT_TRUE(whole) << error;
  ASSERT_GT(whole->kernel.size(), 10000u);

  auto same_table = [](const SymbolTable& a, const SymbolTable& b) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      const Symbol &x = a.symbols()[i], &y = b.symbols()[i];
      ASSERT_TRUE(x.start == y.start && x.end == y.end && x.name() == y.name() && x.binding == y.binding &&
                  x.type == y.type)
          << i << ": " << x.name() << " / " << y.name();
    }
  };
  auto same = [&](const KernelSymbols& k) {
    EXPECT_EQ(k.delta, whole->delta);
    same_table(k.kernel, whole->kernel);
    ASSERT_EQ(k.modules.size(), whole->modules.size());
    for (const auto& [name, table] : whole->modules) {
      ASSERT_EQ(k.modules.count(name), 1u) << name;
      same_table(k.modules.at(name), table);
    }
  };
  KallsymsParser parser("_text", 0);
  size_t pieces = 0;
  ASSERT_TRUE(util::FileBuffer::read_lines(copy, 4096, [&](util::FileBuffer b) {
    parser.add(std::move(b));
    ++pieces;
    return true;
  }));
  EXPECT_GT(pieces, 1000u);
  auto small = parser.finish(&error);
  ASSERT_TRUE(small) << error;
  same(*small);
  int read_errno = 0;
  auto threaded = read_kallsyms(copy, "_text", 0, &error, &read_errno);
  ASSERT_TRUE(threaded) << error;
  EXPECT_EQ(read_errno, 0);
  same(*threaded);

  // The snapshot's own lines: "ADDR T name" outside modules, at an address no other line has.
  std::map<uint64_t, std::vector<std::string>> text_at;
  std::map<uint64_t, int> lines_at;
  std::istringstream in(snapshot);
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string addr, type, name;
    f >> addr >> type >> name;
    const uint64_t a = std::stoull(addr, nullptr, 16);
    ++lines_at[a];
    if ((type == "T" || type == "t") && line.find('\t') == std::string::npos) text_at[a].push_back(name);
  }
  size_t checked = 0;
  for (const auto& [a, names] : text_at) {
    if (lines_at[a] != 1 || a == 0) continue;
    const Symbol* s = whole->kernel.find(a);
    ASSERT_NE(s, nullptr) << names[0];
    EXPECT_EQ(s->start, a);
    EXPECT_EQ(s->name(), names[0]);
    ++checked;
  }
  EXPECT_GT(checked, 10000u);

  // Begun ahead, finished later: the same tables.
  KallsymsRead early(copy, "_text");
  auto ahead = early.finish(0, &error, &read_errno);
  ASSERT_TRUE(ahead) << error;
  same(*ahead);

  // The kernel's table keeps its names, not the text they came in (whose lines also hold the
  // addresses, types and module names): its memory is its symbols and their names, for the whole
  // text and for the one that came in pieces alike. Names kept in the pieces they were read in
  // leave at most the rest of a page at the end of each piece of 512 KiB.
  const size_t piece_slack = 4096 * (snapshot.size() / (512 << 10) + 2);
  for (const KernelSymbols* k : {&*whole, &*small, &*threaded, &*ahead}) {
    size_t names = 0;
    for (const Symbol& s : k->kernel.symbols()) names += s.name().size() + 1;
    EXPECT_LE(k->kernel.memory_bytes(), k->kernel.size() * sizeof(Symbol) + names + 64 + (k == &*small ? 0 : piece_slack))
        << "of a " << snapshot.size() << "-byte text";
  }
}

TEST(Kallsyms, MissingFileIsAReadError) {
  std::string error;
  int read_errno = 0;
  EXPECT_FALSE(read_kallsyms("/nonexistent/kallsyms", "_text", 0, &error, &read_errno));
  EXPECT_EQ(read_errno, ENOENT);
  KallsymsRead early("/nonexistent/kallsyms", "_text");
  read_errno = 0;
  EXPECT_FALSE(early.finish(0, &error, &read_errno));
  EXPECT_EQ(read_errno, ENOENT);
}

// A read begun before the recording's kernel map is known takes the reference address at the
// end: the delta and the module split are those of a parse that knew it from the start. One that
// is never finished stops its threads when it goes (the running kernel's file, 5 MB).
TEST(Kallsyms, ReadAheadTakesTheReferenceAddressAtTheEnd) {
  test::TempDir dir;
  const std::string path = dir.file("kallsyms");
  {
    std::ofstream out(path);
    out << kKallsyms;
  }
  std::string error;
  auto known = parse_kallsyms(kKallsyms, "_text", 0xffffffff91000000, &error);
  ASSERT_TRUE(known) << error;
  KallsymsRead early(path, "_text");
  int read_errno = 0;
  auto late = early.finish(0xffffffff91000000, &error, &read_errno);
  ASSERT_TRUE(late) << error;
  EXPECT_EQ(read_errno, 0);
  EXPECT_EQ(late->delta, known->delta);
  EXPECT_EQ(late->delta, 0xffffffff81000000 - 0xffffffff91000000);
  ASSERT_EQ(late->kernel.size(), known->kernel.size());
  for (size_t i = 0; i < known->kernel.size(); ++i) {
    EXPECT_EQ(late->kernel.symbols()[i].start, known->kernel.symbols()[i].start);
    EXPECT_EQ(late->kernel.symbols()[i].end, known->kernel.symbols()[i].end);
    EXPECT_EQ(late->kernel.symbols()[i].name(), known->kernel.symbols()[i].name());
  }
  ASSERT_EQ(late->modules.count("mymod"), 1u);
  EXPECT_EQ(late->modules.at("mymod").size(), known->modules.at("mymod").size());
  EXPECT_EQ(late->modules.at("mymod").symbols()[0].name(), "mod_fn");

  for (int i = 0; i < 3; ++i) KallsymsRead dropped("/proc/kallsyms", "_text");
}

TEST(JitMap, ParsesPerfMapLines) {
  SymbolTable t;
  size_t n = parse_jit_map("7f0000001000 40 LazyCompile:~foo app.js:1\nbad line\n7f0000002000 0x20 bar\n", t);
  EXPECT_EQ(n, 2u);
  EXPECT_EQ(t.find(0x7f0000001010)->name(), "LazyCompile:~foo app.js:1");
  EXPECT_EQ(t.find(0x7f0000002010)->name(), "bar");
  EXPECT_EQ(t.find(0x7f0000001040), nullptr);  // no size fixups for JIT symbols
}

}  // namespace
}  // namespace tperf::symbols
