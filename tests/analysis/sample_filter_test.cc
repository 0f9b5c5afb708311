// SampleSelection::parse_address reads an -S entry as perf does: libc's strtoul in base 16, the
// whole entry taken (trailing blanks allowed), no overflow. libc's strtoul is the oracle here.
#include "analysis/sample_filter.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace tperf::analysis {
namespace {

bool strtoul_reads(const std::string& s, uint64_t* v) {
  errno = 0;
  char* end = nullptr;
  const unsigned long r = std::strtoul(s.c_str(), &end, 16);
  if (errno || end == s.c_str()) return false;
  for (const char* p = end; *p; ++p) {
    if (!std::isspace(static_cast<unsigned char>(*p))) return false;
  }
  *v = r;
  return true;
}

TEST(SampleSelection, AddressesReadAsStrtoulReadsThem) {
  const char* cases[] = {"f0",       "main",     "0x4011d6",         "0X4011D6",         "add",  "deadbeef ",
                         " 0x10",    "0x",       "0xg",              "-1",               "+ff",  "1a2b3c4d5e6f7a8b",
                         "1a2b3c4d5e6f7a8b9",     "ffffffffffffffff", "10000000000000000", "",     "12 34",
                         "0x0",      "f0\t",     "_start",           "x10",              "00ff", "0x0x1"};
  for (const char* c : cases) {
    uint64_t ours = 0, libc = 0;
    const bool a = SampleSelection::parse_address(c, &ours);
    const bool b = strtoul_reads(c, &libc);
    EXPECT_EQ(a, b) << "'" << c << "'";
    if (a && b) {
      EXPECT_EQ(ours, libc) << "'" << c << "'";
    }
  }
}

TEST(SampleSelection, HexEntriesAreNotNames) {
  SampleSelection s({}, {"f0", "main", "0x1422", "cafe", "qsort"});
  EXPECT_TRUE(s.selects_symbols());
  EXPECT_EQ(s.names(), (std::vector<std::string>{"main", "qsort"}));
  SampleSelection only_addresses({}, {"f0"});
  EXPECT_TRUE(only_addresses.selects_symbols());  // selects, by address only
  EXPECT_TRUE(only_addresses.names().empty());
  EXPECT_FALSE(only_addresses.symbol_selected(nullptr, nullptr, 0xf0));  // outside any map: never
  EXPECT_TRUE(SampleSelection().symbol_selected(nullptr, nullptr, 0));   // no list: everything
}

}  // namespace
}  // namespace tperf::analysis
