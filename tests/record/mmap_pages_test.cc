// The ring-buffer size tperf record takes without -m: perf's 512 KiB for an unprivileged user,
// 2 MiB for root while all buffers stay within 256 MiB.
#include <gtest/gtest.h>
#include <unistd.h>

#include "record/recorder.h"

namespace tperf::record {
namespace {

TEST(DefaultMmapPages, PrivilegedUsersGetBiggerBuffersWithinTheCap) {
  if (::geteuid() != 0) {
    EXPECT_EQ(default_mmap_pages(2), 128u);
    EXPECT_EQ(default_mmap_pages(1024), 128u);
    return;
  }
  EXPECT_EQ(default_mmap_pages(1), 512u);
  EXPECT_EQ(default_mmap_pages(2), 512u);
  EXPECT_EQ(default_mmap_pages(128), 512u);   // 128 x 2 MiB = 256 MiB
  EXPECT_EQ(default_mmap_pages(129), 256u);   // halved to stay within 256 MiB
  EXPECT_EQ(default_mmap_pages(256), 256u);
  EXPECT_EQ(default_mmap_pages(512), 128u);
  EXPECT_EQ(default_mmap_pages(4096), 128u);  // never below perf's size
}

TEST(DefaultMmapPages, ExplicitSizesStillParse) {
  EXPECT_EQ(parse_mmap_pages("512K"), 128u);
  EXPECT_EQ(parse_mmap_pages("2M"), 512u);
  EXPECT_EQ(parse_mmap_pages("64"), 64u);
}

}  // namespace
}  // namespace tperf::record
