// The flame page writer on a hand-built stack table: the JSON the page reads, its escaping inside
// the HTML, and the embedded web/ sources.
#include "output/flame_page.h"

#include <gtest/gtest.h>

#include <string>

#include "output/flame_test_profile.h"
#include "output/web_assets.h"
#include "test_util.h"

namespace tperf::output {
namespace {

size_t count_of(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++n;
  return n;
}

TEST(FlamePage, JsonStringEscapesForScriptElements) {
  EXPECT_EQ(json_string("plain"), "\"plain\"");
  EXPECT_EQ(json_string("a\"b\\c\n\t"), "\"a\\\"b\\\\c\\n\\t\"");
  EXPECT_EQ(json_string("</script>"), "\"\\u003c/script\\u003e\"");
  EXPECT_EQ(json_string("<!--&"), "\"\\u003c!--\\u0026\"");
  EXPECT_EQ(json_string(std::string("\x01\x1f", 2)), "\"\\u0001\\u001f\"");
  EXPECT_EQ(json_string("x\xe2\x80\xa8y\xe2\x80\xa9"), "\"x\\u2028y\\u2029\"");
  EXPECT_EQ(json_string("caf\xc3\xa9"), "\"caf\xc3\xa9\"");  // other UTF-8 as it is
}

TEST(FlamePage, JsonHoldsTheStackTable) {
  const std::string json = flame_profile_json(test::flame_test_profile());
  // Column arrays with the values of flame_test_profile(), kNoIndex as -1.
  EXPECT_NE(json.find("\"frames\":{\"function\":[0,1,2,3,4,5],\"mapping\":[0,0,0,0,-1,1],\"kind\":[0,0,2,0,3,1]}"),
            std::string::npos) << json;
  EXPECT_NE(json.find("\"stacks\":{\"parent\":[-1,0,1,0,1,0],\"frame\":[0,1,2,3,5,4]}"), std::string::npos) << json;
  EXPECT_NE(json.find("\"threads\":{\"pid\":[100,100],\"tid\":[100,101],\"comm\":[\"prog\",\"prog-worker\"]}"),
            std::string::npos) << json;
  EXPECT_NE(json.find("\"events\":{\"name\":[\"cpu-clock\",\"page-faults\"],\"unit\":[\"nanoseconds\",\"count\"]}"),
            std::string::npos) << json;
  EXPECT_NE(json.find("\"counts\":{\"thread\":[0,0,1,1,0,1],\"event\":[0,0,0,0,0,1],\"stack\":[2,1,3,4,5,3],"
                      "\"samples\":[3,1,2,1,1,1],\"weight\":[300,200,300,100,100,7]}"),
            std::string::npos) << json;
  EXPECT_NE(json.find("\"mappings\":[\"prog\",\"[kernel.kallsyms]\"]"), std::string::npos) << json;
  EXPECT_NE(json.find("\"info\":[[\"hostname\",\"box\\u003c1\\u003e\"],[\"cmdline\",\"perf record -g ./prog\"]]"),
            std::string::npos) << json;
  EXPECT_NE(json.find("\"lost\":2"), std::string::npos) << json;
  EXPECT_NE(json.find("\"unwind\":\"# 8 samples\\n# all stacks end in \\u003c/script\\u003e\\n\""), std::string::npos)
      << json;
  EXPECT_NE(json.find("\"evil\\u003c/script\\u003e\\u003c!--\\\"\\u0026'\\u2028\""), std::string::npos) << json;
}

// Python's json module is the judge of well-formedness, on the JSON as the page holds it.
TEST(FlamePage, PageIsSelfContainedAndItsJsonParses) {
  TPERF_REQUIRE_PROGRAM("python3");
  FlamePageOptions options;
  options.title = "tperf flame: a<b>&\"c\"";
  const std::string html = flame_page_html(test::flame_test_profile(), options);
  // One script element for the data and one for the code: a name or the summary with
  // "</script>" in it must not close either early.
  EXPECT_EQ(count_of(html, "</script>"), 2u);
  EXPECT_EQ(count_of(html, "<script"), 2u);
  EXPECT_EQ(html.find("@TPERF_"), std::string::npos) << "a marker was left unfilled";
  EXPECT_NE(html.find("<title>tperf flame: a&lt;b&gt;&amp;&quot;c&quot;</title>"), std::string::npos);
  // Nothing is fetched: no external script, stylesheet or URL.
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  // The code is there whole.
  EXPECT_NE(html.find(std::string(web::flame_js().substr(0, 200))), std::string::npos);
  EXPECT_NE(html.find("window.tperfFlame"), std::string::npos);

  test::TempDir dir;
  const std::string page = dir.file("page.html");
  {
    FILE* f = std::fopen(page.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fwrite(html.data(), 1, html.size(), f);
    std::fclose(f);
  }
  const std::string script =
      "import json,re,sys\n"
      "h=open(sys.argv[1],encoding='utf-8').read()\n"
      "m=re.search(r'<script type=\"application/json\" id=\"tperf-profile\">(.*?)</script>',h,re.S)\n"
      "d=json.loads(m.group(1))\n"
      "print(d['functions']['name'][3])\n"
      "print(d['unwind'],end='')\n"
      "print(sum(d['counts']['weight']))\n";
  int status = -1;
  const std::string out = test::run_command("PYTHONIOENCODING=utf-8 python3 -c " + test::shell_quote(script) + " " + page, &status);
  ASSERT_EQ(status, 0) << out;
  EXPECT_EQ(out, "evil</script><!--\"&'\xe2\x80\xa8\n# 8 samples\n# all stacks end in </script>\n1007\n");
}

TEST(FlamePage, EmbeddedSourcesCannotEndTheirElements) {
  // The page inlines flame.js and flame.css as they are: a "</script" or "</style" in them would
  // end the element in the middle of the code.
  auto lower = [](std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  EXPECT_EQ(lower(web::flame_js()).find("</script"), std::string::npos);
  EXPECT_EQ(lower(web::flame_js()).find("<!--"), std::string::npos);
  EXPECT_EQ(lower(web::flame_css()).find("</style"), std::string::npos);
  // The embedded bytes are the files of web/, not a stale copy.
  EXPECT_EQ(std::string(web::flame_js()), test::read_file(std::string(TPERF_SOURCE_DIR) + "/web/flame.js"));
  EXPECT_EQ(std::string(web::flame_css()), test::read_file(std::string(TPERF_SOURCE_DIR) + "/web/flame.css"));
  EXPECT_EQ(std::string(web::flame_html()), test::read_file(std::string(TPERF_SOURCE_DIR) + "/web/flame.html"));
}

}  // namespace
}  // namespace tperf::output
