#include "session/callchain.h"

#include "perfdata/abi.h"
#include "session/machine.h"

namespace tperf::session {

bool resolve_callchain(const Machine& machine, const Thread* thread, const perfdata::Sample& sample,
                       unsigned max_stack, std::vector<CallchainFrame>* out) {
  using namespace perfdata;
  out->clear();
  uint8_t mode = kMiscUser;
  for (uint64_t ip : sample.callchain) {
    if (out->size() >= max_stack) break;
    if (ip >= kContextMax) {
      switch (ip) {
        case kContextHv:
          mode = kMiscHypervisor;
          break;
        case kContextKernel:
          mode = kMiscKernel;
          break;
        case kContextUser:
          mode = kMiscUser;
          break;
        case kContextUserDeferred:
          // The user part comes later in its own record (kernel 6.19+); the cookie after the
          // marker is not an address.
          return true;
        default:
          out->clear();
          return false;
      }
      continue;
    }
    out->push_back({ip, mode, thread ? machine.find_map(thread, mode, ip) : nullptr});
  }
  return true;
}

}  // namespace tperf::session
