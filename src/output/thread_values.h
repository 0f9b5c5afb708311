// perf report -T/--threads: the counter values PERF_RECORD_READ records carry (a thread's totals
// when it exits, with `perf record -s`), one row per thread and one column per event, as perf
// 6.1 prints its table after the report.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "perfdata/reader.h"

namespace tperf::output {

class ThreadValues {
 public:
  // A READ record (u32 pid, u32 tid, then the value first whatever the read format: perf takes
  // that word). Throws FormatError when the body is too short.
  void add_record(const perfdata::Reader& reader, const perfdata::Record& rec);
  void add(int32_t pid, int32_t tid, int counter, const std::string& name, uint64_t value);
  // "# PID  TID  name..." then a row per thread in the order they came, each value the sum of
  // the thread's READ records of that event.
  void print(std::FILE* out) const;

 private:
  struct Thread {
    int32_t pid, tid;
    std::vector<uint64_t> values;  // by column
  };
  std::vector<Thread> threads_;
  std::vector<int> counters_;  // the attr index of each column, in the order they came
  std::vector<std::string> names_;
};

}  // namespace tperf::output
