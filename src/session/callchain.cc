#include "session/callchain.h"

#include <algorithm>

#include "perfdata/abi.h"
#include "session/machine.h"

namespace tperf::session {

namespace {

enum class Marker { kMode, kEnd, kUnknown };

// A context marker: the mode it switches to, the end of the chain's addresses, or a context perf
// does not know.
Marker apply_marker(uint64_t ip, uint8_t* mode) {
  using namespace perfdata;
  switch (ip) {
    case kContextHv:
      *mode = kMiscHypervisor;
      return Marker::kMode;
    case kContextKernel:
      *mode = kMiscKernel;
      return Marker::kMode;
    case kContextUser:
      *mode = kMiscUser;
      return Marker::kMode;
    case kContextUserDeferred:
      // The user part comes later in its own record (kernel 6.19+); the cookie after the
      // marker is not an address.
      return Marker::kEnd;
    default:
      return Marker::kUnknown;
  }
}

}  // namespace

bool resolve_callchain(const Machine& machine, const Thread* thread, const perfdata::Sample& sample,
                       unsigned max_stack, std::vector<CallchainFrame>* out) {
  return resolve_callchain_range(machine, thread, sample, 0, sample.callchain.size(), false, max_stack, out);
}

bool resolve_callchain_range(const Machine& machine, const Thread* thread, const perfdata::Sample& sample,
                             size_t begin, size_t end, bool caller_order, unsigned max_stack,
                             std::vector<CallchainFrame>* out) {
  using namespace perfdata;
  out->clear();
  const std::vector<uint64_t>& chain = sample.callchain;
  end = std::min(end, chain.size());
  uint8_t mode = kMiscUser;
  // Caller order: the modes are those of a walk from the leaf (the nearest marker on the leaf
  // side decides), and the frames kept the last ones, nearest the root.
  const size_t from = caller_order ? 0 : begin;
  const unsigned limit = caller_order ? ~0u : max_stack;
  for (size_t i = from; i < end && out->size() < limit; ++i) {
    const uint64_t ip = chain[i];
    if (ip >= kContextMax) {
      const Marker m = apply_marker(ip, &mode);
      if (m == Marker::kEnd) break;
      if (m == Marker::kUnknown) {
        out->clear();
        return false;
      }
      continue;
    }
    if (i < begin) continue;
    out->push_back({ip, mode, thread ? machine.find_map(thread, mode, ip) : nullptr});
  }
  if (caller_order && out->size() > max_stack) out->erase(out->begin(), out->end() - max_stack);
  return true;
}

}  // namespace tperf::session
