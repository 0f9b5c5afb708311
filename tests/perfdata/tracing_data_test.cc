// tracepoint_names: the "system:name" of each event format in a TRACING_DATA payload, and a
// FormatError with an offset (never a crash) for every truncation of it.
#include "perfdata/tracing_data.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "perfdata/error.h"

namespace tperf::perfdata {
namespace {

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_u64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_str(std::vector<uint8_t>& out, const std::string& s) { out.insert(out.end(), s.begin(), s.end());
  out.push_back(0); }
void put_text(std::vector<uint8_t>& out, const std::string& s) {
  put_u64(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

// A little-endian payload in perf's layout with two events of system "sched".
std::vector<uint8_t> payload() {
  std::vector<uint8_t> out = {0x17, 0x08, 0x44, 't', 'r', 'a', 'c', 'i', 'n', 'g'};
  put_str(out, "0.6");
  out.push_back(0);  // little endian
  out.push_back(8);  // long size
  put_u32(out, 4096);
  put_str(out, "header_page");
  put_text(out, "field: u64 timestamp;\n");
  put_str(out, "header_event");
  put_text(out, "# compressed entry header\n");
  put_u32(out, 1);
  put_text(out, "name: function\nID: 1\n");
  put_u32(out, 1);  // systems
  put_str(out, "sched");
  put_u32(out, 2);
  put_text(out, "name: sched_switch\nID: 372\nformat:\n");
  put_text(out, "name: sched_process_exec\nID: 365\nformat:\n");
  put_u32(out, 0);  // kallsyms size
  put_u32(out, 0);  // printk size
  put_u64(out, 0);  // saved cmdlines
  return out;
}

TEST(TracingData, NamesFromEventFormats) {
  auto names = tracepoint_names(payload(), 0x100);
  ASSERT_EQ(names.size(), 2u);
  EXPECT_EQ(names.at(372), "sched:sched_switch");
  EXPECT_EQ(names.at(365), "sched:sched_process_exec");
}

TEST(TracingData, EveryTruncationIsAFormatErrorInsideThePayload) {
  const std::vector<uint8_t> full = payload();
  // Cut anywhere before the last event format ends: the names cannot all be read.
  const size_t needed = full.size() - 4 - 4 - 8;
  for (size_t len = 0; len < needed; ++len) {
    std::vector<uint8_t> cut(full.begin(), full.begin() + static_cast<long>(len));
    try {
      tracepoint_names(cut, 0x100);
      ADD_FAILURE() << "no error for " << len << " bytes";
    } catch (const FormatError& e) {
      EXPECT_GE(e.offset(), 0x100u) << len;
      EXPECT_LE(e.offset(), 0x100u + len) << len;
    }
  }
  std::vector<uint8_t> bad = full;
  bad[0] = 0;
  EXPECT_THROW(tracepoint_names(bad, 0), FormatError);
}

}  // namespace
}  // namespace tperf::perfdata
