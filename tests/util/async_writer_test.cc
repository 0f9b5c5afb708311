#include "util/async_writer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "test_util.h"

namespace tperf::util {
namespace {

// Buffers of different sizes, handed over faster than a disk takes them, come out whole and in
// submission order; the buffer given back is empty and can be filled again.
TEST(AsyncWriter, WritesBuffersInOrder) {
  test::TempDir dir;
  std::string path = dir.file("out.txt");
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::string expected;
  {
    AsyncWriter w(f);
    std::string buf;
    for (int i = 0; i < 200; ++i) {
      buf.append(static_cast<size_t>(i * 37 % 5000), static_cast<char>('a' + i % 26));
      buf += std::to_string(i) + "\n";
      expected += buf;
      w.submit(buf);
      EXPECT_TRUE(buf.empty());
    }
    w.drain();
    EXPECT_EQ(test::read_file(path), expected);
    buf = "tail\n";
    expected += buf;
    w.submit(buf);
  }  // the destructor writes what is still pending
  std::fclose(f);
  EXPECT_EQ(test::read_file(path), expected);
}

}  // namespace
}  // namespace tperf::util
