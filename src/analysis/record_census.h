// Every record of a file read once and counted, for the commands that print counts rather than
// samples: `tperf stats` and `tperf report --stats`. Records only: no machine, no symbols.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "perfdata/reader.h"

namespace tperf::analysis {

struct RecordCensus {
  struct Event {
    uint64_t samples = 0;       // SAMPLE records whose id names this event
    uint64_t decoded = 0;       // of those, decoded whole (when asked)
    uint64_t lost_samples = 0;  // LOST_SAMPLES records whose id names it
  };
  std::vector<Event> events;  // by attr index (a pipe's attrs come as records: it grows with them)
  uint64_t unattributed = 0;  // SAMPLE records of an id no attr has
  // When the samples are decoded:
  uint64_t bad_samples = 0;  // samples that did not decode
  uint64_t callchain_frames = 0;
  uint64_t first_time = std::numeric_limits<uint64_t>::max(), last_time = 0;  // of the decoded samples with a time
  // LOST records' lost events, and the samples LOST_SAMPLES records say were lost.
  uint64_t lost_events = 0, lost_samples = 0;
};

// Reads `reader` to its end (the counts by record type are then in reader.stats()). `decode`:
// also decode each sample, for `decoded`, `bad_samples`, `callchain_frames` and the times.
// Throws perfdata::FormatError where the file is damaged, as Reader::next() does.
RecordCensus take_record_census(perfdata::Reader& reader, bool decode);

}  // namespace tperf::analysis
