#include "util/spool.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

namespace tperf::util {

namespace {

std::string errno_text(int e) { return std::strerror(e); }

// Copies all of `in` to `out`; the error names `what`.
void copy_all(int in, int out, const std::string& what, const std::string& dir) {
  std::vector<char> buf(size_t{1} << 20);
  for (;;) {
    ssize_t n = ::read(in, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(fmt::format("{}: read: {}", what, errno_text(errno)));
    }
    if (n == 0) return;
    for (ssize_t done = 0; done < n;) {
      ssize_t w = ::write(out, buf.data() + done, static_cast<size_t>(n - done));
      if (w < 0) {
        if (errno == EINTR) continue;
        throw std::runtime_error(
            fmt::format("{}: copying the stream to a temporary file in {} (it is read twice): {}", what, dir, errno_text(errno)));
      }
      done += w;
    }
  }
}

}  // namespace

bool rereadable_input(const std::string& path) {
  if (path == "-") return false;
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode));
}

SpooledInput::SpooledInput(const std::string& path) : path_(path) {
  int in = -1;
  std::string what = path;
  if (path == "-") {
    in = STDIN_FILENO;
    what = "standard input";
  } else {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0 || rereadable_input(path)) return;  // the reader says what is wrong
    in = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (in < 0) return;
  }
  if (path == "-") {
    struct stat st;
    if (::fstat(in, &st) == 0 && S_ISREG(st.st_mode)) {
      // Standard input redirected from a file: read it by that file.
      path_ = fmt::format("/proc/self/fd/{}", in);
      return;
    }
  }
  const char* tmp = std::getenv("TMPDIR");
  const std::string dir = tmp && *tmp ? tmp : "/tmp";
  fd_ = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd_ < 0) {
    // Filesystems without O_TMPFILE: a named file, unlinked at once.
    std::string name = dir + "/tperf-spool-XXXXXX";
    fd_ = ::mkostemp(name.data(), O_CLOEXEC);
    if (fd_ >= 0) ::unlink(name.c_str());
  }
  const int e = errno;
  if (fd_ < 0) {
    if (in != STDIN_FILENO) ::close(in);
    throw std::runtime_error(fmt::format("{}: cannot create a temporary file in {} (the stream is read twice): {}", what, dir,
                                         errno_text(e)));
  }
  try {
    copy_all(in, fd_, what, dir);
  } catch (...) {
    if (in != STDIN_FILENO) ::close(in);
    ::close(fd_);
    fd_ = -1;
    throw;
  }
  if (in != STDIN_FILENO) ::close(in);
  path_ = fmt::format("/proc/self/fd/{}", fd_);
}

SpooledInput::~SpooledInput() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace tperf::util
