// util::FileBuffer against what std::ifstream reads: a regular file, an empty one, a /proc file
// that says it is empty (and is bigger than the first mapping, so the buffer grows), a missing
// one.
#include "util/file_buffer.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <fstream>
#include <string>
#include <vector>

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

// read_lines() against the file as one read gives it: pieces of whole lines, in order, each
// ended by '\0', no bigger than asked unless one line is.
std::vector<std::string> pieces_of(const std::string& path, size_t chunk, bool* ok) {
  std::vector<std::string> out;
  *ok = FileBuffer::read_lines(path, chunk, [&](FileBuffer b) {
    EXPECT_EQ(b.data()[b.size()], '\0');
    out.emplace_back(b.view());
    return true;
  });
  return out;
}

TEST(FileBuffer, ReadLinesGivesWholeLinesThatAddUpToTheFile) {
  test::TempDir dir;
  const std::string path = dir.file("lines");
  std::string content;
  for (int i = 0; i < 60000; ++i) content += std::string(static_cast<size_t>(i % 97), 'x') + std::to_string(i) + "\n";
  std::ofstream(path, std::ios::binary) << content;
  for (size_t chunk : {4096, 65536, 1 << 20}) {
    SCOPED_TRACE(chunk);
    bool ok = false;
    const auto pieces = pieces_of(path, chunk, &ok);
    ASSERT_TRUE(ok);
    ASSERT_GT(pieces.size(), content.size() / chunk - 1);
    std::string joined;
    for (const std::string& p : pieces) {
      EXPECT_FALSE(p.empty());
      EXPECT_LE(p.size(), chunk);
      EXPECT_EQ(p.back(), '\n');
      joined += p;
    }
    EXPECT_EQ(joined, content);
  }
}

TEST(FileBuffer, ReadLinesKeepsALongLineWholeAndALastLineWithoutItsNewline) {
  test::TempDir dir;
  const std::string path = dir.file("long");
  const std::string long_line = std::string(10000, 'y') + "\n";
  const std::string content = "short\n" + long_line + "after\nlast without newline";
  std::ofstream(path, std::ios::binary) << content;
  bool ok = false;
  const auto pieces = pieces_of(path, 4096, &ok);
  ASSERT_TRUE(ok);
  std::string joined;
  bool long_whole = false;
  for (const std::string& p : pieces) {
    joined += p;
    if (p.find(long_line) != std::string::npos) long_whole = true;
  }
  EXPECT_EQ(joined, content);
  EXPECT_TRUE(long_whole);
  EXPECT_TRUE(pieces.back().ends_with("\nlast without newline") || pieces.back() == "last without newline") << pieces.back();
}

TEST(FileBuffer, ReadLinesOnProcKallsymsAddsUpToOneRead) {
  // Generated as it is read (size 0, reads of any length); the same from one read to the next
  // while no module or BPF program comes or goes, which a retry covers.
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto whole = FileBuffer::read("/proc/kallsyms");
    ASSERT_TRUE(whole);
    bool ok = false;
    const auto pieces = pieces_of("/proc/kallsyms", 256 << 10, &ok);
    ASSERT_TRUE(ok);
    std::string joined;
    for (const std::string& p : pieces) joined += p;
    if (joined != whole->view() && attempt < 2) continue;
    EXPECT_GT(pieces.size(), 4u);
    EXPECT_EQ(joined, whole->view());
    break;
  }
}

TEST(FileBuffer, ReadLinesEmptyMissingAndStopped) {
  test::TempDir dir;
  std::ofstream(dir.file("empty")).close();
  bool ok = false;
  EXPECT_TRUE(pieces_of(dir.file("empty"), 4096, &ok).empty());
  EXPECT_TRUE(ok);
  errno = 0;
  EXPECT_TRUE(pieces_of("/nonexistent/tperf/file", 4096, &ok).empty());
  EXPECT_FALSE(ok);
  EXPECT_EQ(errno, ENOENT);
  // The sink stops the reading after the first piece.
  std::string content;
  for (int i = 0; i < 10000; ++i) content += "line " + std::to_string(i) + "\n";
  std::ofstream(dir.file("f"), std::ios::binary) << content;
  int calls = 0;
  EXPECT_TRUE(FileBuffer::read_lines(dir.file("f"), 4096, [&](FileBuffer) { return ++calls < 1; }));
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace tperf::util
