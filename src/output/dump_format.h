// `tperf dump`'s lines: one per record in file order (offset, size, type and decoded fields), in
// the spirit of `perf report -D`; with `callchain` each sample's chain on indented lines.
#pragma once

#include <cstdint>
#include <string>

namespace tperf::perfdata {
class Reader;
struct Record;
struct Sample;
}  // namespace tperf::perfdata

namespace tperf::output {

struct DumpFormatOptions {
  bool callchain = false;
};

// Appends `rec`'s line (and its newline) to `line`: perf's "[cpu ]time " prefix, the offset and
// size, the type, the decoded fields; a record that cannot be decoded ends in "<malformed: ...>".
// `combined_type`: the OR of every event's sample_type (which prefix fields there are);
// `sample`: scratch space reused between calls.
void append_dump_line(const perfdata::Reader& reader, const perfdata::Record& rec, uint64_t combined_type,
                      const DumpFormatOptions& opt, perfdata::Sample& sample, std::string& line);

}  // namespace tperf::output
