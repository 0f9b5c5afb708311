// Demangling as perf shows names: C++ without parameters (what `c++filt -p` prints), names that are
// not mangled left alone, OCaml names as perf rewrites them.
#include "symbols/demangle.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace tperf::symbols {
namespace {

TEST(Demangle, CxxMatchesCxxfiltWithoutParameters) {
  if (!test::have_program("c++filt")) GTEST_SKIP() << "c++filt missing";
  for (const char* name : {"_ZN2ns3fooEPKcRKSt6vectorIiSaIiEE", "_ZNK2ns3Bar3getEv", "_ZN3geo11AccumulatorIlE3runEli",
                           "_ZNSt6vectorIiSaIiEE9push_backERKi", "_ZZ4mainENKUllE_clEl"}) {
    std::string expected = test::run_command(std::string("c++filt -p '") + name + "'");
    while (!expected.empty() && expected.back() == '\n') expected.pop_back();
    auto got = demangle(name);
    ASSERT_TRUE(got.has_value()) << name;
    EXPECT_EQ(*got, expected) << name;
  }
}

TEST(Demangle, PlainNamesStay) {
  EXPECT_FALSE(demangle("main").has_value());
  EXPECT_FALSE(demangle("__libc_start_main").has_value());
  EXPECT_FALSE(demangle("_Zbogus").has_value());
  EXPECT_FALSE(demangle("").has_value());
}

TEST(Demangle, RustV0AndLegacy) {
  // libiberty drops the legacy hash and v0 crate disambiguators unless asked to be verbose.
  EXPECT_EQ(demangle("_ZN4core3fmt5write17h0123456789abcdefE").value_or(""), "core::fmt::write");
  EXPECT_EQ(demangle("_RNvCs15kBYyAo9fc_7mycrate4spin").value_or(""), "mycrate::spin");
}

TEST(Demangle, OcamlAsPerf) {
  EXPECT_EQ(demangle_ocaml("camlStdlib__list__map_123").value_or(""), "Stdlib.list.map");
  EXPECT_EQ(demangle_ocaml("camlFoo$2abar").value_or(""), "Foo*bar");
  EXPECT_FALSE(demangle_ocaml("camlfoo").has_value());
}

}  // namespace
}  // namespace tperf::symbols
