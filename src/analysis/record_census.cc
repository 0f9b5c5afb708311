#include "analysis/record_census.h"

#include <algorithm>

#include "perfdata/records.h"

namespace tperf::analysis {

RecordCensus take_record_census(perfdata::Reader& reader, bool decode) {
  using namespace perfdata;
  RecordCensus c;
  Record rec;
  Sample sample;
  while (reader.next(rec)) {
    switch (rec.type) {
      case kRecordSample:
      case kRecordLostSamples: {
        const bool lost = rec.type == kRecordLostSamples;
        if (lost && decode) c.lost_samples += decode_lost_samples(rec.body(), reader.swapped(), rec.offset + 8);
        const int ai = reader.attr_index_of(rec);
        if (ai < 0) {
          if (!lost) ++c.unattributed;
          break;
        }
        if (c.events.size() < reader.attrs().size()) c.events.resize(reader.attrs().size());
        RecordCensus::Event& e = c.events[static_cast<size_t>(ai)];
        if (lost) {
          ++e.lost_samples;
          break;
        }
        ++e.samples;
        if (!decode) break;
        try {
          reader.decode_sample(rec, sample);
        } catch (const FormatError&) {
          ++c.bad_samples;
          break;
        }
        ++e.decoded;
        c.callchain_frames += sample.callchain.size();
        if (sample.has(kSampleTime)) {
          c.first_time = std::min(c.first_time, sample.time);
          c.last_time = std::max(c.last_time, sample.time);
        }
        break;
      }
      case kRecordLost:
        if (decode) c.lost_events += decode_lost(rec.body(), reader.swapped(), rec.offset + 8).lost;
        break;
      default:
        break;
    }
  }
  return c;
}

}  // namespace tperf::analysis
