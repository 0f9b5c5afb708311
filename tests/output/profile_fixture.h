// A small stack table built by hand for the export writers' tests: two processes, a kernel-only
// stack, an inlined frame, frames without symbol (in a DSO and outside any map), a sample without
// frames, and the time line of its 13 samples. The expected outputs in the tests are worked out
// by hand from these values.
#pragma once

#include "analysis/profile.h"

namespace tperf::test {

inline analysis::Profile hand_built_profile() {
  using analysis::kNoIndex;
  analysis::Profile p;
  p.mappings = {
      {"/usr/bin/app", "app", "0123456789abcdef0123456789abcdef01234567", 0x400000, 0x401000, 0, false},
      {"/usr/lib/x86_64-linux-gnu/libc.so.6", "libc.so.6", "aabbccdd", 0x7f0000000000, 0x7f0000100000, 0x1000, false},
      {"[kernel.kallsyms]", "[kernel.kallsyms]", "", 0xffffffff81000000, 0xffffffff82000000, 0, true},
  };
  p.functions = {
      {"main", "main.c"},                           // 0
      {"ns::Worker::run(int) const", "worker.cc"},  // 1
      {"[unknown]", ""},                            // 2
      {"inlined_helper", "helper.h"},               // 3
      {"native_safe_halt", ""},                     // 4
      {"__libc_start_call_main", ""},               // 5
  };
  auto frame = [](uint32_t fn, uint32_t map, uint64_t addr, uint64_t rel, bool inlined = false, bool kernel = false,
                  uint32_t line = 0, std::string file = "") {
    analysis::ProfileFrame f;
    f.function = fn;
    f.mapping = map;
    f.address = addr;
    f.rel_address = rel;
    f.inlined = inlined;
    f.kernel = kernel;
    f.line = line;
    f.file = std::move(file);
    return f;
  };
  p.frames = {
      frame(0, 0, 0x401100, 0x1100),                                        // 0 main
      frame(1, 0, 0x401200, 0x1200),                                        // 1 run
      frame(3, 0, 0x401200, 0x1200, true, false, 7, "helper.h"),            // 2 inlined_helper, in run
      frame(2, 1, 0x7f0000012345, 0x13345),                                 // 3 [unknown] in libc
      frame(4, 2, 0xffffffff81001234, 0xffffffff81001234, false, true),     // 4 native_safe_halt
      frame(2, kNoIndex, 0x1234, 0x1234),                                   // 5 [unknown], no map
      frame(5, 1, 0x7f0000029d90, 0x2ad90),                                 // 6 __libc_start_call_main
  };
  p.stacks = {
      {kNoIndex, 6, 0},  // 0 __libc_start_call_main
      {0, 0, 1},         // 1 main
      {1, 1, 2},         // 2 run
      {2, 2, 3},         // 3 inlined_helper
      {3, 3, 4},         // 4 [unknown] in libc
      {kNoIndex, 4, 0},  // 5 native_safe_halt
      {1, 5, 2},         // 6 [unknown] outside any map, called from main
  };
  p.threads = {{100, 100, "app"}, {100, 101, "app worker"}, {0, 0, "swapper"}};
  p.events = {{"cpu-clock", "nanoseconds"}};
  p.counts = {
      {0, 0, 4, 3, 750000}, {1, 0, 3, 2, 500000}, {0, 0, 2, 1, 250000},
      {2, 0, 5, 5, 1250000}, {1, 0, 6, 1, 250000}, {0, 0, kNoIndex, 1, 250000},
  };
  // The same 13 samples in time order, 250 us apart from t = 1 s.
  const std::vector<std::pair<uint32_t, uint32_t>> order = {
      {0, 4}, {1, 3}, {2, 5}, {0, 4}, {0, 2}, {2, 5}, {1, 3}, {2, 5}, {1, 6}, {0, 4}, {2, 5}, {0, kNoIndex}, {2, 5},
  };
  uint64_t t = 1000000000;
  for (auto [thread, stack] : order) {
    p.samples.push_back({t, thread, 0, stack, 250000});
    t += 250000;
  }
  p.first_time = 1000000000;
  p.last_time = t - 250000;
  p.info = {{"hostname", "testhost"}, {"captured on", "Tue Nov 24 20:22:39 2026"}};
  return p;
}

}  // namespace tperf::test
