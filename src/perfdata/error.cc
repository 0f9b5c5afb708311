#include "perfdata/error.h"

#include <fmt/format.h>

namespace tperf::perfdata {

FormatError::FormatError(uint64_t offset, const std::string& what)
    : std::runtime_error(fmt::format("offset {:#x}: {}", offset, what)), offset_(offset), detail_(what) {}

}  // namespace tperf::perfdata

#include "perfdata/byte_reader.h"

namespace tperf::perfdata {

void ByteReader::fail(const char* what, size_t needed) const {
  throw FormatError(offset(), fmt::format("truncated {}: need {} bytes, {} left", what, needed, remaining()));
}

}  // namespace tperf::perfdata
