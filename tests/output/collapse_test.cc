// Folded stacks of a hand-built stack table (tests/output/profile_fixture.h), and the frame-name
// rules of stackcollapse-perf.pl one by one. Expected lines are worked out by hand from the
// fixture and from stackcollapse-perf.pl's documented rules.
#include "output/collapse.h"

#include <gtest/gtest.h>

#include "output/profile_fixture.h"

namespace tperf::output {
namespace {

std::string folded(const analysis::Profile& p, const CollapseOptions& o) {
  std::string error;
  CollapsedStacks stacks = collapse_stacks(p, o, &error);
  EXPECT_EQ(error, "");
  std::string text;
  for (const auto& [stack, count] : stacks.lines) text += stack + " " + std::to_string(count) + "\n";
  return text;
}

TEST(Collapse, DefaultCountsSamplesRootFirstSorted) {
  EXPECT_EQ(folded(test::hand_built_profile(), {}),
            "app 1\n"
            "app;__libc_start_call_main;main;ns::Worker::run 1\n"
            "app;__libc_start_call_main;main;ns::Worker::run;inlined_helper;[libc.so.6] 3\n"
            "app_worker;__libc_start_call_main;main;[unknown] 1\n"
            "app_worker;__libc_start_call_main;main;ns::Worker::run;inlined_helper 2\n"
            "swapper;native_safe_halt 5\n");
}

TEST(Collapse, PidTidPeriodAndKernelAnnotation) {
  CollapseOptions o;
  o.include_tid = true;
  o.period = true;
  o.annotate_kernel = true;
  EXPECT_EQ(folded(test::hand_built_profile(), o),
            "app-100/100 250000\n"
            "app-100/100;__libc_start_call_main;main;ns::Worker::run 250000\n"
            "app-100/100;__libc_start_call_main;main;ns::Worker::run;inlined_helper;[libc.so.6] 750000\n"
            "app_worker-100/101;__libc_start_call_main;main;[unknown] 250000\n"
            "app_worker-100/101;__libc_start_call_main;main;ns::Worker::run;inlined_helper 500000\n"
            "swapper-0/0;native_safe_halt_[k] 1250000\n");
  o = {};
  o.include_pid = true;
  o.addrs = true;
  std::string text = folded(test::hand_built_profile(), o);
  EXPECT_NE(text.find("app-100;__libc_start_call_main;main;ns::Worker::run;inlined_helper;[libc.so.6 <13345>] 3\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("app_worker-100;__libc_start_call_main;main;[unknown <1234>] 1\n"), std::string::npos) << text;
}

TEST(Collapse, OneEventAtATime) {
  analysis::Profile p = test::hand_built_profile();
  p.events.push_back({"page-faults", "count"});
  p.counts.insert(p.counts.begin(), {0, 1, 2, 4, 4});  // the first sample seen is a page fault
  std::string error;
  CollapsedStacks s = collapse_stacks(p, {}, &error);
  EXPECT_EQ(s.event, 1u);
  EXPECT_TRUE(s.other_events);
  ASSERT_EQ(s.lines.size(), 1u);
  EXPECT_EQ(s.lines[0].first, "app;__libc_start_call_main;main;ns::Worker::run");
  EXPECT_EQ(s.lines[0].second, 4u);
  CollapseOptions o;
  o.event = "cpu-clock";
  s = collapse_stacks(p, o, &error);
  EXPECT_EQ(s.event, 0u);
  EXPECT_EQ(s.lines.size(), 6u);
  o.event = "cycles";
  s = collapse_stacks(p, o, &error);
  EXPECT_EQ(error, "no event 'cycles' in the file (it has: cpu-clock, page-faults)");
  EXPECT_TRUE(s.lines.empty());
}

std::vector<std::string> names(const std::string& sym, const std::string& dso, const std::string& pname = "app",
                               CollapseOptions o = {}) {
  return stackcollapse_frame_names(sym, dso, 0x1234, pname, o);
}

TEST(Collapse, StackcollapseFrameNameRules) {
  using V = std::vector<std::string>;
  // Offsets go, argument lists go, "(anonymous namespace)" stays.
  EXPECT_EQ(names("main+0x1f", "/a"), V{"main"});
  EXPECT_EQ(names("std::vector<int>::push_back(int const&)", "/a"), V{"std::vector<int>::push_back"});
  EXPECT_EQ(names("a::(anonymous namespace)::f(int)", "/a"), V{"a::(anonymous namespace)::f"});
  // A name starting with '(' is dropped, as stackcollapse skips "process names".
  EXPECT_EQ(names("(anonymous namespace)::g()", "/a"), V{});
  // Go method names keep their parentheses.
  EXPECT_EQ(names("net/http.(*Client).Do", "/a"), V{"net/http.(*Client).Do"});
  // ';' would split the frame; quotes are dropped.
  EXPECT_EQ(names("a;b", "/a"), V{"a:b"});
  EXPECT_EQ(names("RegExp:[&<>\"']", "/a"), V{"RegExp:[&<>]"});
  // "->" splits a name into inline parts, the later ones marked _[i]; trailing empty parts go.
  EXPECT_EQ(names("outer->inner", "/a"), V({"outer", "inner_[i]"}));
  EXPECT_EQ(names("Foo::operator->", "/a"), V{"Foo::operator"});
  // No symbol: the DSO's file name in brackets; no map either: [unknown].
  EXPECT_EQ(names("[unknown]", "/usr/lib/libz.so.1"), V{"[libz.so.1]"});
  EXPECT_EQ(names("[unknown]", "[unknown]"), V{"[unknown]"});
  EXPECT_EQ(names("[unknown]", "[kernel.kallsyms]"), V{"[[kernel.kallsyms]]"});
  // Java signatures lose their leading 'L' in a java process only.
  EXPECT_EQ(names("Lorg/mozilla/Foo;.call(Ljava/lang/Object;)V", "/tmp/perf-1.map", "java"),
            V{"org/mozilla/Foo:.call"});
  EXPECT_EQ(names("Lorg/mozilla/Foo;.call(Ljava/lang/Object;)V", "/tmp/perf-1.map", "node"),
            V{"Lorg/mozilla/Foo:.call"});
  CollapseOptions o;
  o.annotate_kernel = true;
  o.annotate_jit = true;
  EXPECT_EQ(names("schedule", "[kernel.kallsyms]", "app", o), V{"schedule_[k]"});
  EXPECT_EQ(names("tcp_sendmsg", "/lib/modules/6.1/build/vmlinux", "app", o), V{"tcp_sendmsg_[k]"});
  EXPECT_EQ(names("[unknown]", "[unknown]", "app", o), V{"[unknown]"});
  EXPECT_EQ(names("jitted", "/tmp/perf-42.map", "app", o), V{"jitted_[j]"});
  EXPECT_EQ(names("main", "/usr/bin/app", "app", o), V{"main"});
}

TEST(Collapse, WriteCollapsed) {
  CollapsedStacks s;
  s.lines = {{"a;b", 3}, {"a;c", 18446744073709551615ULL}};
  char* buf = nullptr;
  size_t size = 0;
  FILE* f = open_memstream(&buf, &size);
  write_collapsed(f, s);
  std::fclose(f);
  EXPECT_EQ(std::string(buf, size), "a;b 3\na;c 18446744073709551615\n");
  free(buf);
}

}  // namespace
}  // namespace tperf::output
