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
// at most `max_stack` frames are kept; `thread` nullptr: their maps are not looked up. Returns
// false, with `out` empty, for a chain with a context perf does not know (perf drops such chains).
bool resolve_callchain(const Machine& machine, const Thread* thread, const perfdata::Sample& sample,
                       unsigned max_stack, std::vector<CallchainFrame>* out);

// perf's walk of part of a chain, raw entries [begin, end) of sample.callchain, as it walks the
// callchain after a sample's branch frames (report --branch-history on samples with both):
// - `caller_order` false: from `begin` toward the root in the user mode until a marker in the part
//   says otherwise (perf does not look at the markers before `begin`);
// - true: from the root toward `begin`, each frame in the mode of the nearest marker on its leaf
//   side, in the whole chain.
// At most `max_stack` frames, the first walked. Leaf first in `out`, whatever the order. false,
// with `out` empty, for a context perf does not know.
bool resolve_callchain_range(const Machine& machine, const Thread* thread, const perfdata::Sample& sample,
                             size_t begin, size_t end, bool caller_order, unsigned max_stack,
                             std::vector<CallchainFrame>* out);

}  // namespace tperf::session
