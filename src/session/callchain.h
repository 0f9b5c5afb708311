// Callchain resolution: a sample's callchain (kernel ips with context markers) as frames, each
// with the cpumode its context gives it and the map it falls in, the way perf walks them.
#pragma once

#include <cstdint>
#include <vector>

#include "perfdata/sample.h"

namespace tperf::session {

class Machine;
class Thread;
struct Map;

struct CallchainFrame {
  uint64_t ip = 0;
  uint8_t cpumode = 0;         // perf_event_header.misc & 7 of the context the ip came from
  const Map* map = nullptr;    // nullptr when no map covers it
};

// Leaf first. Context markers switch the cpumode (kernel, user, hypervisor) and are not frames;
// at most `max_stack` frames are kept. Returns false, with `out` empty, for a chain with a
// context perf does not know (perf drops such chains).
bool resolve_callchain(const Machine& machine, const Thread* thread, const perfdata::Sample& sample,
                       unsigned max_stack, std::vector<CallchainFrame>* out);

}  // namespace tperf::session
