#pragma once

// An input read more than once (off-CPU analysis makes a first pass for the switched-out
// intervals, then the report's) that arrives as a stream: standard input or a FIFO. Its bytes go
// to an unlinked temporary file once, which is then opened by path as often as needed.

#include <string>

namespace tperf::util {

// Whether `path` can be opened and read more than once: a regular file or a directory (of
// `perf record --threads`), not standard input ("-") or a FIFO, which the first reader drains.
bool rereadable_input(const std::string& path);

class SpooledInput {
 public:
  // `path` as the commands take it ("-" for standard input). A regular file (or a directory) is
  // left where it is; a stream is copied into an unlinked file under $TMPDIR (default /tmp).
  // Throws std::runtime_error naming the input and the temporary directory when that fails.
  explicit SpooledInput(const std::string& path);
  ~SpooledInput();
  SpooledInput(const SpooledInput&) = delete;
  SpooledInput& operator=(const SpooledInput&) = delete;

  // What to open: the original path, or /proc/self/fd/N of the copy.
  const std::string& path() const { return path_; }
  bool spooled() const { return fd_ >= 0; }

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace tperf::util
