// A small stack table written by hand for the flame writer tests: every number the tests expect
// is derived from the counts below, never from the writers.
#pragma once

#include "analysis/profile.h"

namespace tperf::test {

// functions: 0 main, 1 work, 2 spin<int> (inlined), 3 a name with markup and "</script>",
//            4 [unknown], 5 do_syscall_64 (kernel)
// stacks:    0 main; 1 main>work; 2 main>work>spin<int>; 3 main>evil; 4 main>work>do_syscall_64;
//            5 main>[unknown]
// event 0 (cpu-clock, ns), weights: stack 2: 300 (3 samples), stack 1: 200 (1), stack 3: 300 (2),
//   stack 4: 100 (1), stack 5: 100 (1), no stack: 0 (none) -> total 1000 over 8 samples.
//   Inclusive: main 1000, work 600, spin<int> 300, evil 300, do_syscall_64 100, [unknown] 100.
// event 1 (page-faults): one sample of weight 7 on stack 3, thread 1.
inline analysis::Profile flame_test_profile() {
  analysis::Profile p;
  p.mappings.push_back({"/usr/bin/prog", "prog", "abcd", 0x400000, 0x500000, 0, false});
  p.mappings.push_back({"[kernel.kallsyms]", "[kernel.kallsyms]", "", 0xffffffff81000000, 0xffffffff82000000, 0, true});
  p.functions = {{"main", "prog.c"},
                 {"work", "prog.c"},
                 {"spin<int>", "spin.h"},
                 {"evil</script><!--\"&'\xe2\x80\xa8", ""},
                 {"[unknown]", ""},
                 {"do_syscall_64", ""}};
  auto frame = [&](uint32_t fn, uint32_t map, uint64_t addr, bool inlined, bool kernel) {
    analysis::ProfileFrame f;
    f.function = fn;
    f.mapping = map;
    f.address = addr;
    f.inlined = inlined;
    f.kernel = kernel;
    p.frames.push_back(f);
  };
  frame(0, 0, 0x401000, false, false);
  frame(1, 0, 0x401100, false, false);
  frame(2, 0, 0x401200, true, false);
  frame(3, 0, 0x401300, false, false);
  frame(4, analysis::kNoIndex, 0x1234, false, false);
  frame(5, 1, 0xffffffff81001000, false, true);
  p.stacks = {{analysis::kNoIndex, 0, 0}, {0, 1, 1}, {1, 2, 2}, {0, 3, 1}, {1, 5, 2}, {0, 4, 1}};
  p.threads = {{100, 100, "prog"}, {100, 101, "prog-worker"}};
  p.events = {{"cpu-clock", "nanoseconds"}, {"page-faults", "count"}};
  p.counts = {{0, 0, 2, 3, 300}, {0, 0, 1, 1, 200}, {1, 0, 3, 2, 300}, {1, 0, 4, 1, 100},
              {0, 0, 5, 1, 100}, {1, 1, 3, 1, 7}};
  p.info = {{"hostname", "box<1>"}, {"cmdline", "perf record -g ./prog"}};
  p.unwind_summary = "# 8 samples\n# all stacks end in </script>\n";
  p.lost_samples = 2;
  return p;
}

}  // namespace tperf::test
