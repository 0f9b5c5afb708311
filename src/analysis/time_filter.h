// --time, perf's syntax, for report and script: "start,end" in seconds with up to 9 decimals,
// either side may be empty, several ranges separated by spaces ("1.5,2 3,4"); or percentages of
// the span between the file's first and last sample (HEADER_SAMPLE_TIME): "10%/2" (the 2nd
// tenth), "0%-10%,30%-40%", "50%".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tperf::perfdata {
class Reader;
}  // namespace tperf::perfdata

namespace tperf::analysis {

struct TimeRange {
  uint64_t start = 0;  // 0: open
  uint64_t end = 0;    // 0: open
};
struct SampleTimeBounds {
  uint64_t first = 0;  // both 0: unknown (percentages are refused, as perf does)
  uint64_t last = 0;
};
// The first and last sample times the file's header recorded (HEADER_SAMPLE_TIME), which
// percentages are of; unknown (both 0) for a pipe or a file without them.
SampleTimeBounds sample_time_bounds(const perfdata::Reader& reader);
// Returns "" or why the string is not valid.
std::string parse_time_ranges(std::string_view text, std::vector<TimeRange>* ranges, SampleTimeBounds bounds = {});
// perf's rule: a sample without a time is never skipped.
bool time_skipped(const std::vector<TimeRange>& ranges, uint64_t time);

}  // namespace tperf::analysis
