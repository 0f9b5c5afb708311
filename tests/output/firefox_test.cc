// Firefox Profiler (Gecko format) files of a hand-built stack table; expected values worked out by
// hand. Breakpad ids: the build id's first 16 bytes as a little-endian GUID, then the age 0.
#include "output/firefox.h"

#include <gtest/gtest.h>

#include "output/json_text.h"
#include "output/profile_fixture.h"

namespace tperf::output {
namespace {

TEST(Firefox, BreakpadIdIsTheBuildIdAsGuidPlusAge) {
  EXPECT_EQ(breakpad_id("7ebc65e52f2bbea498b4040fa92f7238377aaba9"), "E565BC7E2B2FA4BE98B4040FA92F72380");
  EXPECT_EQ(breakpad_id("aabbccdd"), "DDCCBBAA0000000000000000000000000");
  EXPECT_EQ(breakpad_id(""), "");
}

TEST(Firefox, ThreadTablesOfTheFixture) {
  const std::string json = encode_firefox(test::hand_built_profile());
  // app's main thread: samples at 0, 0.75, 1.0, 2.25 and 2.75 ms after the first; stacks interned
  // root first, the prefix before the stack; frames "name (in dso)", kernel ones in category 1.
  EXPECT_NE(json.find("{\"tid\":100,\"pid\":100,\"name\":\"app\",\"processType\":\"default\""), std::string::npos);
  EXPECT_NE(json.find("\"samples\":{\"schema\":{\"stack\":0,\"time\":1,\"responsiveness\":2},"
                      "\"data\":[[4,0.000,0],[4,0.750,0],[2,1.000,0],[4,2.250,0],[null,2.750,0]]}"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"stackTable\":{\"schema\":{\"prefix\":0,\"frame\":1},\"data\":[[null,0],[0,1],[1,2],[2,3],[3,4]]},"
                      "\"stringTable\":[\"__libc_start_call_main (in libc.so.6)\",\"main (in app)\","
                      "\"ns::Worker::run(int) const (in app)\",\"inlined_helper (in app)\",\"[unknown] (in libc.so.6)\"]}"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"data\":[[0,false,0,null,null,null,null,0,0],[1,false,0,null,null,null,null,0,0],"
                      "[2,false,0,null,null,null,null,0,0],[3,false,0,null,null,7,null,0,0],"
                      "[4,false,0,null,null,null,null,0,0]]}"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("{\"tid\":0,\"pid\":0,\"name\":\"swapper\""), std::string::npos);
  EXPECT_NE(json.find("\"stringTable\":[\"native_safe_halt (in [kernel.kallsyms])\"]"), std::string::npos);
  EXPECT_NE(json.find("\"data\":[[0,false,0,null,null,null,null,1,0]]"), std::string::npos);
  // Libs with their ids; the interval is the mean period, 0.25 ms.
  EXPECT_NE(json.find("{\"start\":4194304,\"end\":4198400,\"offset\":0,\"name\":\"app\",\"path\":\"/usr/bin/app\","
                      "\"debugName\":\"app\",\"debugPath\":\"/usr/bin/app\",\"breakpadId\":\"67452301AB89EFCD0123456789ABCDEF0\","
                      "\"codeId\":\"0123456789abcdef0123456789abcdef01234567\",\"arch\":\"\"}"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"breakpadId\":\"\",\"codeId\":null"), std::string::npos);
  EXPECT_EQ(json.rfind("{\"meta\":{\"interval\":0.25,", 0), 0u) << json.substr(0, 100);
}

TEST(JsonText, EscapesAndKeepsUtf8Valid) {
  std::string out;
  append_json_string(out, "a\"b\\c\n\x01\xc3\xa9\xff\xe2\x82");
  EXPECT_EQ(out, "\"a\\\"b\\\\c\\u000a\\u0001\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
  out.clear();
  append_json_ms(out, 1234567890);
  EXPECT_EQ(out, "1234.567");
}

}  // namespace
}  // namespace tperf::output
