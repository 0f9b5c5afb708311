// `tperf report --stats`: what `perf report --stats` (perf 6.1) prints instead of the report, the
// records of each type with their share of all, then each event's samples and LOST_SAMPLES
// records.
#pragma once

#include <cstdint>
#include <cstdio>
#include <vector>

#include "perfdata/reader.h"

namespace tperf::output {

// What one event (by attr index) counted: its samples and the LOST_SAMPLES records naming it.
struct EventRecordCounts {
  uint64_t samples = 0;
  uint64_t lost_samples = 0;
};

// After `reader` has read every record (its stats() hold the counts by type).
void print_report_stats(std::FILE* out, const perfdata::Reader& reader, const std::vector<EventRecordCounts>& events);

}  // namespace tperf::output
