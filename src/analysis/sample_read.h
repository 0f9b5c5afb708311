// Samples that carry counter values (PERF_SAMPLE_READ), delivered as perf 6.1 delivers them: one
// sample per value read (each member of a group read, or the one value), for the event the
// value's id names, with the value's growth since that id's previous sample as its period; a
// value that did not grow gives no sample. `perf record -e '{cpu-clock,page-faults}:S'` files
// are made of such samples.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "perfdata/attr.h"
#include "perfdata/reader.h"
#include "perfdata/sample.h"

namespace tperf::analysis {

struct ReadDelivery {
  int attr_index = -1;
  uint64_t id = 0;
  uint64_t period = 0;
};

class SampleReadSplitter {
 public:
  explicit SampleReadSplitter(const perfdata::Reader& reader) : reader_(reader) {}

  static bool applies(const perfdata::PerfEventAttr& attr) {
    return (attr.sample_type & perfdata::kSampleRead) != 0;
  }
  // The samples perf makes of `s` (of an event whose attr has SAMPLE_READ), in the order of its
  // values. Each call moves the ids' previous values on: call it once per record.
  const std::vector<ReadDelivery>& split(const perfdata::Sample& s);

 private:
  const perfdata::Reader& reader_;
  std::unordered_map<uint64_t, uint64_t> last_;  // by id: the value of its previous sample
  std::vector<ReadDelivery> out_;
};

}  // namespace tperf::analysis
