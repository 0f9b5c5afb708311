// `tperf report --stats`: what `perf report --stats` (perf 6.1) prints instead of the report, the
// records of each type with their share of all, then each event's samples and LOST_SAMPLES
// records.
#pragma once

#include <cstdio>

#include "analysis/record_census.h"
#include "perfdata/reader.h"

namespace tperf::output {

// After `reader` has read every record into `census` (its stats() hold the counts by type).
void print_report_stats(std::FILE* out, const perfdata::Reader& reader, const analysis::RecordCensus& census);

}  // namespace tperf::output
