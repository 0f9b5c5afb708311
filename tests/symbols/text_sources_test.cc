// The text symbol sources: kallsyms (types kept, module split, KASLR delta, hidden addresses) and
// perf-PID.map JIT files.
#include <gtest/gtest.h>

#include "symbols/jit_map.h"
#include "symbols/kallsyms.h"

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
