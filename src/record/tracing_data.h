// The TRACING_DATA blob perf stores for tracepoint events (trace-cmd's format): the ring-buffer
// page and event headers and the format file of every recorded tracepoint, copied from tracefs,
// so that a report can decode their RAW payloads without the recording machine's tracefs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "record/event_spec.h"

namespace tperf::record {

// Builds the blob for the tracepoints among `events` (tracefs found by tracefs_dir()). kallsyms
// and printk formats are stored empty (perf's reader accepts size 0). Throws std::runtime_error
// naming the tracefs file that could not be read.
std::vector<uint8_t> build_tracing_data(const std::vector<EventSpec>& events);

}  // namespace tperf::record
