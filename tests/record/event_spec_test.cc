// Event names and modifiers as perf parses them. The attr values perf itself picks for the same
// -e strings are compared in tests/e2e/record_test.cc (RecordAttrs); here: the config numbers of
// the UAPI, tracepoint ids read back from tracefs, modifier combinations and the error messages.
#include "record/event_spec.h"

#include <gtest/gtest.h>

#include <fstream>

#include "perfdata/abi.h"

namespace tperf::record {
namespace {

using namespace perfdata;

TEST(EventSpec, SoftwareEventsAndAliases) {
  EXPECT_EQ(parse_event("cpu-clock").config, kSwCpuClock);
  EXPECT_EQ(parse_event("task-clock").config, kSwTaskClock);
  EXPECT_EQ(parse_event("faults").config, parse_event("page-faults").config);
  EXPECT_EQ(parse_event("cs").config, kSwContextSwitches);
  EXPECT_EQ(parse_event("major-faults").config, kSwPageFaultsMaj);
  EXPECT_EQ(parse_event("cpu-clock").type, kTypeSoftware);
  EXPECT_FALSE(parse_event("cpu-clock").needs_pmu());
  EXPECT_TRUE(parse_event("cycles").needs_pmu());
  EXPECT_EQ(parse_event("instructions").config, 1u);
  EXPECT_EQ(parse_event("r1a8").type, kTypeRaw);
  EXPECT_EQ(parse_event("r1a8").config, 0x1a8u);
}

TEST(EventSpec, Modifiers) {
  auto plain = parse_event("cpu-clock");
  EXPECT_FALSE(plain.exclude_user || plain.exclude_kernel || plain.exclude_hv);
  EXPECT_TRUE(plain.exclude_guest);
  auto u = parse_event("cpu-clock:u");
  EXPECT_FALSE(u.exclude_user);
  EXPECT_TRUE(u.exclude_kernel);
  EXPECT_TRUE(u.exclude_hv);
  auto k = parse_event("cpu-clock:k");
  EXPECT_TRUE(k.exclude_user);
  EXPECT_FALSE(k.exclude_kernel);
  auto uk = parse_event("cpu-clock:uk");
  EXPECT_FALSE(uk.exclude_user || uk.exclude_kernel);
  EXPECT_TRUE(uk.exclude_hv);
  EXPECT_EQ(parse_event("cpu-clock:ppp").precise_ip, 3u);
  EXPECT_EQ(parse_event("cpu-clock:P").precise_ip, 3u);
  auto g = parse_event("cpu-clock:G");
  EXPECT_FALSE(g.exclude_guest);
  EXPECT_TRUE(g.exclude_host);
  EXPECT_EQ(parse_event("cpu-clock:u").name, "cpu-clock:u");
  EXPECT_THROW(parse_event("cpu-clock:pppp"), std::invalid_argument);
  EXPECT_THROW(parse_event("cpu-clock:x"), std::invalid_argument);
}

TEST(EventSpec, Tracepoints) {
  std::string dir = tracefs_dir();
  if (dir.empty()) GTEST_SKIP() << "tracefs is not mounted";
  std::ifstream in(dir + "/events/sched/sched_switch/id");
  uint64_t id = 0;
  ASSERT_TRUE(in >> id);
  auto e = parse_event("sched:sched_switch");
  EXPECT_TRUE(e.is_tracepoint());
  EXPECT_EQ(e.config, id);
  EXPECT_EQ(parse_event("sched:sched_switch:k").exclude_user, true);
  try {
    parse_event("sched:no_such_event");
    FAIL();
  } catch (const std::invalid_argument& err) {
    EXPECT_NE(std::string(err.what()).find("unknown tracepoint"), std::string::npos) << err.what();
  }
  EXPECT_THROW(parse_event("sched:../../x"), std::invalid_argument);
}

TEST(EventSpec, Lists) {
  auto list = parse_event_list("cpu-clock,page-faults:u");
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[1].name, "page-faults:u");
  EXPECT_THROW(parse_event_list(""), std::invalid_argument);
  try {
    parse_event("no-such-event");
    FAIL();
  } catch (const std::invalid_argument& err) {
    EXPECT_NE(std::string(err.what()).find("'no-such-event'"), std::string::npos);
  }
}

}  // namespace
}  // namespace tperf::record
