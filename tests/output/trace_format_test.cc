// The trace field's evaluator (output/trace_format): a TRACING_DATA payload built here byte by
// byte, with one event whose format and raw data are written out below, so the expected text
// follows from the print format by hand. Malformed payloads, formats and raw data end in an
// error or libtraceevent's fallback, never a read outside the data.
#include "output/trace_format.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "perfdata/error.h"

namespace tperf::output {
namespace {

constexpr const char* kHeaderPage =
    "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
    "\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
    "\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
    "\tfield: char data;\toffset:16;\tsize:4080;\tsigned:1;\n";

constexpr const char* kCommon =
    "format:\n"
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n";

// id 42: a fixed string, an int and a dynamic string (__data_loc: length << 16 | offset).
std::string good_event() {
  return std::string("name: ev\nID: 42\n") + kCommon +
         "\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
         "\tfield:int value;\toffset:24;\tsize:4;\tsigned:1;\n"
         "\tfield:__data_loc char[] name;\toffset:28;\tsize:4;\tsigned:0;\n\n"
         "print fmt: \"comm=%s value=%d name=%s\", REC->comm, REC->value, __get_str(name)\n";
}

// id 43: a print format that does not parse (an unknown field, an unclosed call).
std::string broken_event() {
  return std::string("name: broken\nID: 43\n") + kCommon +
         "\tfield:int value;\toffset:8;\tsize:4;\tsigned:1;\n\n"
         "print fmt: \"value=%d\", (REC->nosuchfield(\n";
}

void put_u32(std::vector<uint8_t>& b, uint32_t v) {
  for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_u64(std::vector<uint8_t>& b, uint64_t v) {
  for (int i = 0; i < 8; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_cstr(std::vector<uint8_t>& b, const std::string& s) {
  b.insert(b.end(), s.begin(), s.end());
  b.push_back(0);
}
void put_text(std::vector<uint8_t>& b, const std::string& s) {
  put_u64(b, s.size());
  b.insert(b.end(), s.begin(), s.end());
}

// trace-cmd's layout, version 0.6, little-endian, 8-byte longs.
std::vector<uint8_t> tracing_data(const std::vector<std::string>& events) {
  std::vector<uint8_t> b = {0x17, 0x08, 0x44, 't', 'r', 'a', 'c', 'i', 'n', 'g'};
  put_cstr(b, "0.6");
  b.push_back(0);  // little-endian
  b.push_back(8);  // long size
  put_u32(b, 4096);
  put_cstr(b, "header_page");
  put_text(b, kHeaderPage);
  put_cstr(b, "header_event");
  put_text(b, "# compressed entry header\n");
  put_u32(b, 0);  // ftrace formats
  put_u32(b, 1);  // systems
  put_cstr(b, "test");
  put_u32(b, static_cast<uint32_t>(events.size()));
  for (const auto& e : events) put_text(b, e);
  put_u32(b, 0);  // kallsyms
  put_u32(b, 0);  // printk formats
  put_u64(b, 0);  // saved cmdlines
  return b;
}

// The raw data of event 42: comm "worker", value -7, name "disk0" after the fixed fields.
std::vector<uint8_t> good_raw() {
  std::vector<uint8_t> r(38, 0);
  r[0] = 42;
  std::memcpy(&r[8], "worker", 6);
  const int32_t value = -7;
  std::memcpy(&r[24], &value, 4);
  const uint32_t loc = (6u << 16) | 32u;  // "disk0" and its NUL at offset 32
  std::memcpy(&r[28], &loc, 4);
  std::memcpy(&r[32], "disk0", 6);
  return r;
}

TEST(TraceFormat, PrintsTheFormatOfTheRawData) {
  std::vector<uint8_t> td = tracing_data({good_event()});
  TraceFormatter f(td, 0);
  std::string out;
  EXPECT_TRUE(f.append(out, 42, 0, good_raw()));
  EXPECT_EQ(out, "comm=worker value=-7 name=disk0");
}

TEST(TraceFormat, UnknownIdPrintsNothing) {
  std::vector<uint8_t> td = tracing_data({good_event()});
  TraceFormatter f(td, 0);
  std::string out;
  EXPECT_FALSE(f.append(out, 7, 0, good_raw()));
  EXPECT_EQ(out, "");
}

// Raw data cut short reads as zeros past its end: the fields it still holds print as before.
// (A record too short to hold its type prints libtraceevent's "[UNKNOWN EVENT]", as in perf.)
TEST(TraceFormat, TruncatedRawDataReadsNoFurther) {
  std::vector<uint8_t> td = tracing_data({good_event()});
  TraceFormatter f(td, 0);
  std::vector<uint8_t> raw = good_raw();
  for (size_t n : {size_t{0}, size_t{3}, size_t{11}, size_t{26}, size_t{30}, raw.size() - 3}) {
    SCOPED_TRACE(n);
    std::string out;
    EXPECT_TRUE(f.append(out, 42, 0, std::span<const uint8_t>(raw.data(), n)));
    // libtraceevent (as perf) picks the format by the record's common_type: no type, no event.
    if (n < 2) {
      EXPECT_EQ(out, "[UNKNOWN EVENT]");
      continue;
    }
    ASSERT_TRUE(out.starts_with("comm=")) << out;
    if (n == 11) {
      EXPECT_TRUE(out.starts_with("comm=wor value=0 name=")) << out;
    }
    if (n == 26) {
      EXPECT_TRUE(out.starts_with("comm=worker value=")) << out;
    }
  }
  // After the short records, the whole one prints whole again (nothing of theirs is left).
  std::string out;
  EXPECT_TRUE(f.append(out, 42, 0, raw));
  EXPECT_EQ(out, "comm=worker value=-7 name=disk0");
}

// A dynamic field pointing far past the record (offset 0xffff, length 0xffff) stays inside the
// formatter's zeroed copy: the string prints empty.
TEST(TraceFormat, DynamicFieldPastTheRecord) {
  std::vector<uint8_t> td = tracing_data({good_event()});
  TraceFormatter f(td, 0);
  std::vector<uint8_t> raw = good_raw();
  const uint32_t loc = 0xffffffffu;
  std::memcpy(&raw[28], &loc, 4);
  std::string out;
  EXPECT_TRUE(f.append(out, 42, 0, raw));
  EXPECT_EQ(out, "comm=worker value=-7 name=");
}

// A print format libtraceevent cannot parse: that event prints libtraceevent's fallback (the
// marker and its fields), the other events of the payload print as usual.
TEST(TraceFormat, BrokenPrintFormatFallsBack) {
  std::vector<uint8_t> td = tracing_data({broken_event(), good_event()});
  TraceFormatter f(td, 0);
  std::vector<uint8_t> raw(12, 0);
  raw[0] = 43;
  raw[8] = 5;
  std::string out;
  EXPECT_TRUE(f.append(out, 43, 0, raw));
  EXPECT_NE(out.find("[FAILED TO PARSE]"), std::string::npos) << out;
  EXPECT_NE(out.find("value=5"), std::string::npos) << out;
  out.clear();
  EXPECT_TRUE(f.append(out, 42, 0, good_raw()));
  EXPECT_EQ(out, "comm=worker value=-7 name=disk0");
}

// A format text that is not one (no fields, no print fmt) and fields placed absurdly far: no
// crash, and nothing is read outside the data.
TEST(TraceFormat, GarbageFormatTextIsHarmless) {
  std::string far = std::string("name: far\nID: 44\n") + kCommon +
                    "\tfield:int value;\toffset:1073741824;\tsize:4;\tsigned:1;\n\n"
                    "print fmt: \"value=%d\", REC->value\n";
  std::vector<uint8_t> td = tracing_data({"name: junk\nID: 45\n\x01\x02garbage(((", far, good_event()});
  TraceFormatter f(td, 0);
  std::vector<uint8_t> raw(16, 0xff);
  std::string out;
  f.append(out, 44, 0, raw);
  EXPECT_EQ(out, "");  // its fields lie past any record: not evaluated
  f.append(out, 45, 0, raw);  // its type 0xffff names no event: "[UNKNOWN EVENT]"
  EXPECT_EQ(out, "[UNKNOWN EVENT]");
  out.clear();
  // A record of event 42 whose common_type names the far event: not evaluated either.
  std::vector<uint8_t> typed = good_raw();
  typed[0] = 44;
  f.append(out, 42, 0, typed);
  EXPECT_EQ(out, "");
  out.clear();
  EXPECT_TRUE(f.append(out, 42, 0, good_raw()));
  EXPECT_EQ(out, "comm=worker value=-7 name=disk0");
}

// A payload cut short inside its event formats is a FormatError naming the offset.
TEST(TraceFormat, TruncatedPayloadIsAnError) {
  std::vector<uint8_t> td = tracing_data({good_event()});
  td.resize(td.size() - 40);  // into the event format's text
  try {
    TraceFormatter f(td, 0x1000);
    FAIL() << "no error";
  } catch (const perfdata::FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("event format"), std::string::npos) << e.what();
    EXPECT_GT(e.offset(), 0x1000u);
  }
}

}  // namespace
}  // namespace tperf::output
