// The TRACING_DATA payload (file-mode feature, pipe-mode HEADER_TRACING_DATA record): what perf
// stored of tracefs when it recorded tracepoints. Only the event format files' "name:" and "ID:"
// are read here, the names perf gives tracepoint events that no EVENT_DESC or EVENT_UPDATE names.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>

namespace tperf::perfdata {

// Tracepoint id -> "system:name". `offset` is the payload's file offset, for errors. Throws
// FormatError (with the offset of the bad field) when the payload is malformed; the byte order
// of its sizes is the payload's own (its endianness byte).
std::map<uint64_t, std::string> tracepoint_names(std::span<const uint8_t> data, uint64_t offset);

}  // namespace tperf::perfdata
