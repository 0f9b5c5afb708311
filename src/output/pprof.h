// pprof profiles (profile.proto, gzip-compressed) from the stack table: what `pprof`, `go tool
// pprof`, speedscope, Pyroscope and the cloud profilers read.
#pragma once

#include <string>

#include "analysis/profile.h"

namespace tperf::output {

// The profile.proto message, not compressed. Layout:
//  - two sample types per event: samples and the sum of the periods in the event's unit
//    ("samples"/"count" and "cpu-clock"/"nanoseconds" with one event; with several,
//    "EVENT_samples"/"count" and "EVENT"/unit for each); default_sample_type is the first event's
//    period type, period_type that type and period its mean period;
//  - a sample per (thread, stack) with labels pid and tid (numbers) and comm (string);
//  - location ids leaf first; a location is a frame and the frames inlined into it at the same
//    address, its Line entries the innermost inlined callee first, the frame it sits in last;
//  - mappings with their build ids as unpadded lowercase hex;
//  - time_nanos from the recording's "captured on" time when the profile has it (0 otherwise),
//    duration_nanos from the first to the last sample; the profile's info lines as comments.
std::string encode_pprof(const analysis::Profile& profile);

// gzip of `data` (the form pprof files are stored in). Throws std::runtime_error if zlib fails.
std::string gzip_compress(const std::string& data);

}  // namespace tperf::output
