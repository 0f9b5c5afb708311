// util::FileBuffer against what std::ifstream reads: a regular file, an empty one, a /proc file
// that says it is empty (and is bigger than the first mapping, so the buffer grows), a missing
// one.
#include "util/file_buffer.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <fstream>
#include <string>

#include "test_util.h"

namespace tperf::util {
namespace {

TEST(FileBuffer, RegularFileWholeAndTerminated) {
  test::TempDir dir;
  std::string path = dir.file("f");
  std::string content;
  for (int i = 0; i < 100000; ++i) content += "line " + std::to_string(i) + "\n";
  std::ofstream(path, std::ios::binary) << content;
  auto buf = FileBuffer::read(path);
  ASSERT_TRUE(buf);
  EXPECT_EQ(buf->view(), content);
  EXPECT_EQ(buf->data()[buf->size()], '\0');
  EXPECT_GE(buf->capacity(), content.size() + 1);
}

TEST(FileBuffer, EmptyFile) {
  test::TempDir dir;
  std::string path = dir.file("empty");
  std::ofstream(path).close();
  auto buf = FileBuffer::read(path);
  ASSERT_TRUE(buf);
  EXPECT_EQ(buf->size(), 0u);
  EXPECT_EQ(buf->data()[0], '\0');
}

TEST(FileBuffer, ProcFileGrowsPastTheFirstMapping) {
  // /proc/kallsyms says size 0 and holds megabytes; /proc/self/maps is small.
  for (const char* path : {"/proc/kallsyms", "/proc/self/smaps"}) {
    SCOPED_TRACE(path);
    std::string expect = test::read_file(path);
    if (expect.empty()) GTEST_SKIP() << path << " is empty here";
    auto buf = FileBuffer::read(path);
    ASSERT_TRUE(buf);
    if (std::string(path) == "/proc/kallsyms") {
      // Generated on each read, the same while no module loads.
      EXPECT_EQ(buf->view(), expect);
    } else {
      EXPECT_GT(buf->size(), 0u);
    }
    EXPECT_EQ(buf->data()[buf->size()], '\0');
  }
}

TEST(FileBuffer, MovedBufferKeepsItsBytesWhereTheyWere) {
  FileBuffer a = FileBuffer::copy_of("hello");
  const char* where = a.data();
  FileBuffer b = std::move(a);
  EXPECT_EQ(b.data(), where);
  EXPECT_EQ(b.view(), "hello");
  EXPECT_EQ(a.size(), 0u);
  FileBuffer c;
  c = std::move(b);
  EXPECT_EQ(c.view(), "hello");
}

TEST(FileBuffer, MissingFileSetsErrno) {
  errno = 0;
  auto buf = FileBuffer::read("/nonexistent/tperf/file");
  EXPECT_FALSE(buf);
  EXPECT_EQ(errno, ENOENT);
}

}  // namespace
}  // namespace tperf::util
