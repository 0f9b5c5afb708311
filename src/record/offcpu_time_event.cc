#include "record/offcpu_time_event.h"

#include <cstring>

#include "perfdata/abi.h"

namespace tperf::record {

using namespace perfdata;

PerfEventAttr offcpu_time_attr(const PerfEventAttr& like) {
  PerfEventAttr a;
  a.type = kTypeSoftware;
  a.size = kAttrSizeVer7;
  a.config = kSwBpfOutput;
  a.sample_period = 1;  // a frequency of 1, as perf sets it; nothing samples this event
  a.set_flag(kFlagFreq);
  a.sample_type = kSampleIdentifier | kSampleIp | kSampleTid | kSampleTime | kSamplePeriod | kSampleCallchain |
                  (like.sample_type & kSampleCpu);
  a.read_format = kReadId;
  a.set_flag(kFlagDisabled);
  a.set_flag(kFlagSampleIdAll, like.flag(kFlagSampleIdAll));
  if (like.flag(kFlagUseClockid)) {
    a.set_flag(kFlagUseClockid);
    a.clockid = like.clockid;
  }
  return a;
}

std::vector<uint8_t> offcpu_time_sample(const PerfEventAttr& attr, const OffCpuTotal& total, uint64_t id,
                                        uint64_t time) {
  std::vector<uint64_t> chain;
  if (!total.kernel_stack.empty()) {
    chain.push_back(kContextKernel);
    chain.insert(chain.end(), total.kernel_stack.begin(), total.kernel_stack.end());
  }
  if (!total.user_stack.empty()) {
    chain.push_back(kContextUser);
    chain.insert(chain.end(), total.user_stack.begin(), total.user_stack.end());
  }
  const uint64_t ip =
      !total.kernel_stack.empty() ? total.kernel_stack.front() : !total.user_stack.empty() ? total.user_stack.front() : 0;

  std::vector<uint64_t> words(1, 0);  // the header, filled in below
  const uint64_t st = attr.sample_type;
  if (st & kSampleIdentifier) words.push_back(id);
  if (st & kSampleIp) words.push_back(ip);
  if (st & kSampleTid) words.push_back(uint64_t{total.tid} << 32 | total.pid);
  if (st & kSampleTime) words.push_back(time);
  if (st & kSampleId) words.push_back(id);
  if (st & kSampleCpu) words.push_back(0);
  if (st & kSamplePeriod) words.push_back(total.ns);
  if (st & kSampleCallchain) {
    words.push_back(chain.size());
    words.insert(words.end(), chain.begin(), chain.end());
  }
  const uint16_t misc = total.kernel_stack.empty() ? kMiscUser : kMiscKernel;
  const uint64_t size = words.size() * 8;
  words[0] = uint64_t{kRecordSample} | uint64_t{misc} << 32 | size << 48;
  std::vector<uint8_t> out(size);
  std::memcpy(out.data(), words.data(), size);
  return out;
}

}  // namespace tperf::record
