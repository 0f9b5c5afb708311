// The progress bar draws on a terminal (a pseudo-terminal here) and nowhere else.
#include "util/progress.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>

namespace tperf::util {
namespace {

// Everything the master side of a pty has to read now.
std::string drain(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) break;
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

TEST(ProgressBar, DrawsOnATerminalAndErasesItself) {
  int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0) GTEST_SKIP() << "no pseudo-terminals here";
  ASSERT_EQ(::grantpt(master), 0);
  ASSERT_EQ(::unlockpt(master), 0);
  int tty = ::open(::ptsname(master), O_RDWR | O_NOCTTY);
  ASSERT_GE(tty, 0);
  const uint64_t total = ProgressBar::kMinTotal * 2;
  {
    ProgressBar bar("reading", total, tty);
    EXPECT_TRUE(bar.active());
    for (uint64_t done = 0; done <= total; done += total / 1000) bar.update(done);
    bar.update(total);
  }
  std::string out = drain(master);
  EXPECT_NE(out.find("\rreading ["), std::string::npos) << out;
  EXPECT_NE(out.find("  0%"), std::string::npos) << out;
  EXPECT_NE(out.find("100%"), std::string::npos) << out;
  // The last thing written blanks the line and returns to its start.
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out.back(), '\r');
  EXPECT_EQ(out.find_first_not_of(" \r", out.rfind("100%") + 5), std::string::npos) << out;
  ::close(tty);
  ::close(master);
}

TEST(ProgressBar, SilentInAPipeAndForSmallInputs) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  {
    ProgressBar bar("reading", ProgressBar::kMinTotal * 4, p[1]);
    EXPECT_FALSE(bar.active());
    for (uint64_t done = 0; done < ProgressBar::kMinTotal * 4; done += 1 << 20) bar.update(done);
  }
  ::close(p[1]);
  char c;
  EXPECT_EQ(::read(p[0], &c, 1), 0) << "the bar wrote into a pipe";
  ::close(p[0]);

  int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0) return;
  ASSERT_EQ(::grantpt(master), 0);
  ASSERT_EQ(::unlockpt(master), 0);
  int tty = ::open(::ptsname(master), O_RDWR | O_NOCTTY);
  ASSERT_GE(tty, 0);
  {
    ProgressBar bar("reading", ProgressBar::kMinTotal - 1, tty);
    EXPECT_FALSE(bar.active());
    bar.update(ProgressBar::kMinTotal - 1);
  }
  EXPECT_EQ(drain(master), "");
  ::close(tty);
  ::close(master);
}

}  // namespace
}  // namespace tperf::util
