// --call-graph parsing (fp, fp,defer, dwarf[,size]) and the attr bits deferred callchains put on
// the events: defer_callchain on every sampling event, defer_output on the one tracking event
// (on several, each CALLCHAIN_DEFERRED record would be written twice).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>

#include "perfdata/abi.h"
#include "record/event_list.h"
#include "record/event_spec.h"
#include "record/perf_event.h"
#include "record/recorder.h"

namespace tperf::record {
namespace {

using namespace perfdata;

TEST(CallGraph, ParsesFpDeferAndRefusesDeferElsewhere) {
  CallGraph mode = CallGraph::kNone;
  uint32_t size = 8192;
  bool defer = true;
  parse_call_graph("fp", &mode, &size, &defer);
  EXPECT_EQ(mode, CallGraph::kFramePointer);
  EXPECT_FALSE(defer);
  parse_call_graph("fp,defer", &mode, &size, &defer);
  EXPECT_EQ(mode, CallGraph::kFramePointer);
  EXPECT_TRUE(defer);
  parse_call_graph("dwarf,4096", &mode, &size, &defer);
  EXPECT_EQ(mode, CallGraph::kDwarf);
  EXPECT_EQ(size, 4096u);
  EXPECT_FALSE(defer);
  try {
    parse_call_graph("dwarf,defer", &mode, &size, &defer);
    FAIL() << "dwarf,defer accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "deferred callchain only works with FP");
  }
  EXPECT_THROW(parse_call_graph("fp,8192", &mode, &size, &defer), std::invalid_argument);
  EXPECT_THROW(parse_call_graph("fp,deferred", &mode, &size, &defer), std::invalid_argument);
}

TEST(CallGraph, DeferBitsOnSamplingEventsAndTheTrackingEvent) {
  for (bool system_wide : {false, true}) {
    EventListConfig cfg;
    cfg.events = {parse_event("cpu-clock"), parse_event("page-faults")};
    cfg.system_wide = system_wide;
    cfg.cpus = {0};
    cfg.threads = {1};
    cfg.call_graph = CallGraph::kFramePointer;
    cfg.defer_callchain = true;
    EventList list(cfg);
    size_t tracking = 0, defer_output = 0;
    for (const auto& ev : list.events()) {
      const bool samples_callchains = (ev.attr.sample_type & kSampleCallchain) != 0;
      EXPECT_EQ(ev.attr.flag(kFlagDeferCallchain), samples_callchains) << ev.spec.name;
      tracking += ev.tracking;
      defer_output += ev.attr.flag(kFlagDeferOutput);
      EXPECT_EQ(ev.attr.flag(kFlagDeferOutput), ev.tracking) << ev.spec.name;
    }
    EXPECT_EQ(tracking, 1u);
    EXPECT_EQ(defer_output, 1u);
  }
  // Without deferral (or the kernel refused it) neither bit is set.
  EventListConfig cfg;
  cfg.events = {parse_event("cpu-clock")};
  cfg.threads = {1};
  cfg.call_graph = CallGraph::kFramePointer;
  EventList list(cfg);
  EXPECT_FALSE(list.events()[0].attr.flag(kFlagDeferCallchain));
  EXPECT_FALSE(list.events()[0].attr.flag(kFlagDeferOutput));
}

TEST(CallGraph, KernelsBefore619RefuseDeferredCallchains) {
  // The test machine runs Linux 6.18. On 6.19+ the answer also depends on the kernel's
  // configuration (CONFIG_UNWIND_USER) and perf_event_paranoid: only the stable answer is checked.
  std::ifstream in("/proc/sys/kernel/osrelease");
  std::string release;
  in >> release;
  int major = 0, minor = 0;
  ASSERT_EQ(std::sscanf(release.c_str(), "%d.%d", &major, &minor), 2) << release;
  const bool new_kernel = major > 6 || (major == 6 && minor >= 19);
  const bool accepted = kernel_accepts_deferred_callchains();
  if (!new_kernel) {
    EXPECT_FALSE(accepted) << release;
  }
  EXPECT_EQ(kernel_accepts_deferred_callchains(), accepted);  // probed once, same answer
}

}  // namespace
}  // namespace tperf::record
