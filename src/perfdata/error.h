// The error raised when perf.data bytes do not follow the format: it always names the byte offset.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace tperf::perfdata {

class FormatError : public std::runtime_error {
 public:
  FormatError(uint64_t offset, const std::string& what);
  uint64_t offset() const { return offset_; }
  // The message without the "offset 0x..: " prefix.
  const std::string& detail() const { return detail_; }

 private:
  uint64_t offset_;
  std::string detail_;
};

// I/O failures (open, read, write) that are not about the format.
class IoError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace tperf::perfdata
