// The static SVG flame graph on a hand-built stack table, read back with a real XML parser
// (python3's xml.etree): well-formed whatever the names, widths proportional to the weights of
// flame_test_profile() (written there by hand), labels that fit, colours by frame kind.
#include "output/flame_svg.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>

#include "output/flame_test_profile.h"
#include "test_util.h"

namespace tperf::output {
namespace {

struct SvgFrame {
  double x = 0, y = 0, width = 0;
  std::string fill;
  std::string label;  // the drawn text ("" when none)
  std::string title;
};

// name (the title up to " (") -> frame, as xml.etree reads the file.
std::map<std::string, SvgFrame> parse_svg(const std::string& svg, std::string* error) {
  test::TempDir dir;
  const std::string path = dir.file("flame.svg");
  FILE* f = std::fopen(path.c_str(), "w");
  std::fwrite(svg.data(), 1, svg.size(), f);
  std::fclose(f);
  const std::string script =
      "import sys, xml.etree.ElementTree as ET\n"
      "ns={'s':'http://www.w3.org/2000/svg'}\n"
      "root=ET.parse(sys.argv[1]).getroot()\n"
      "for g in root.iter('{http://www.w3.org/2000/svg}g'):\n"
      "  if g.get('class')!='frame': continue\n"
      "  t=g.find('s:title',ns).text; r=g.find('s:rect',ns); x=g.find('s:text',ns)\n"
      "  print('\\t'.join([t, r.get('x'), r.get('y'), r.get('width'), r.get('fill'), x.text if x is not None else '']))\n";
  int status = -1;
  const std::string out =
      test::run_command("PYTHONIOENCODING=utf-8 python3 -c " + test::shell_quote(script) + " " + path + " 2>&1", &status);
  std::map<std::string, SvgFrame> frames;
  if (status != 0) {
    *error = out;
    return frames;
  }
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    std::vector<std::string> cols;
    std::istringstream in(line);
    std::string col;
    while (std::getline(in, col, '\t')) cols.push_back(col);
    if (cols.size() < 5) continue;
    SvgFrame fr;
    fr.title = cols[0];
    fr.x = std::stod(cols[1]);
    fr.y = std::stod(cols[2]);
    fr.width = std::stod(cols[3]);
    fr.fill = cols[4];
    fr.label = cols.size() > 5 ? cols[5] : "";
    frames[cols[0].substr(0, cols[0].rfind(" ("))] = fr;
  }
  return frames;
}

// "rgb(r,g,b)" -> {r, g, b}
std::vector<int> rgb(const std::string& fill) {
  int r = -1, g = -1, b = -1;
  std::sscanf(fill.c_str(), "rgb(%d,%d,%d)", &r, &g, &b);
  return {r, g, b};
}

TEST(FlameSvg, WellFormedWithWidthsProportionalToWeight) {
  TPERF_REQUIRE_PROGRAM("python3");
  FlameSvgOptions options;
  options.title = "t<&>";
  options.width = 1000;
  const std::string svg = flame_svg(test::flame_test_profile(), options);
  std::string error;
  const auto frames = parse_svg(svg, &error);
  ASSERT_TRUE(error.empty()) << error << "\n" << svg;
  // Event 0 has the most samples (8 against 1), so it is drawn; its weights sum to 1000.
  const std::map<std::string, double> weight = {{"all", 1000},        {"main", 1000},         {"work", 600},
                                                {"spin<int>", 300},   {"do_syscall_64", 100}, {"[unknown]", 100},
                                                {"evil</script><!--\"&'\xe2\x80\xa8", 300}};
  ASSERT_EQ(frames.size(), weight.size()) << svg;
  const double full = frames.at("all").width;
  EXPECT_NEAR(full, 1000 - 2 * 10, 0.01);  // the image less its margins
  for (const auto& [name, w] : weight) {
    ASSERT_TRUE(frames.count(name)) << name << "\n" << svg;
    EXPECT_NEAR(frames.at(name).width, full * w / 1000, 0.01) << name;
  }
  // A flame graph: callers below their callees, callees start at their caller's left edge.
  EXPECT_LT(frames.at("work").y, frames.at("main").y);
  EXPECT_LT(frames.at("spin<int>").y, frames.at("work").y);
  EXPECT_GE(frames.at("work").x, frames.at("main").x);
  EXPECT_LE(frames.at("work").x + frames.at("work").width, frames.at("main").x + frames.at("main").width + 0.01);
  // The title carries the counts: work has 1 + 3 + 1 samples of event 0.
  EXPECT_EQ(frames.at("work").title, "work (5 samples, 600 ns, 60.00%)");
  EXPECT_EQ(frames.at("all").title, "all (8 samples, 1000 ns, 100.00%)");
}

TEST(FlameSvg, LabelsFitAndColoursFollowTheKind) {
  TPERF_REQUIRE_PROGRAM("python3");
  analysis::Profile p = test::flame_test_profile();
  p.functions[0].name = std::string(300, 'm');  // a name far wider than its frame
  FlameSvgOptions options;
  options.width = 600;
  std::string error;
  const auto frames = parse_svg(flame_svg(p, options), &error);
  ASSERT_TRUE(error.empty()) << error;
  for (const auto& [name, f] : frames) {
    // 11px monospace is 6.6px a character; 3px of padding on each side.
    EXPECT_LE(f.label.size() * 6.6, f.width - 6 + 0.01) << name << ": '" << f.label << "'";
  }
  const SvgFrame& mainf = frames.at(std::string(300, 'm'));
  EXPECT_FALSE(mainf.label.empty());
  EXPECT_EQ(mainf.label.substr(mainf.label.size() - 2), "..");
  EXPECT_LT(mainf.label.size(), 300u);

  // Kernel blue, user warm, inlined green-blue, unknown grey.
  const auto kernel = rgb(frames.at("do_syscall_64").fill);
  const auto user = rgb(frames.at("work").fill);
  const auto inl = rgb(frames.at("spin<int>").fill);
  const auto unknown = rgb(frames.at("[unknown]").fill);
  EXPECT_GT(kernel[2], kernel[0]);
  EXPECT_GT(user[0], user[2]);
  EXPECT_GT(inl[1], inl[0]);
  EXPECT_EQ(unknown[0], unknown[1]);
  EXPECT_EQ(unknown[1], unknown[2]);
}

TEST(FlameSvg, ChoosesTheEventAndMeasure) {
  TPERF_REQUIRE_PROGRAM("python3");
  FlameSvgOptions options;
  options.event = 1;  // page-faults: one sample of weight 7 in main>evil
  std::string error;
  auto frames = parse_svg(flame_svg(test::flame_test_profile(), options), &error);
  ASSERT_TRUE(error.empty()) << error;
  EXPECT_EQ(frames.size(), 3u);  // all, main, evil
  EXPECT_EQ(frames.at("all").title, "all (1 samples, 7 count, 100.00%)");

  options.event = 0;
  options.by_samples = true;
  frames = parse_svg(flame_svg(test::flame_test_profile(), options), &error);
  ASSERT_TRUE(error.empty()) << error;
  // By samples: work has 5 of 8.
  EXPECT_NEAR(frames.at("work").width, frames.at("all").width * 5 / 8, 0.01);
}

// Symbol names are bytes from the recorded binaries: neither invalid UTF-8 nor control
// characters (not allowed in XML 1.0) may make the file unreadable.
TEST(FlameSvg, AnyBytesInNamesStayWellFormed) {
  TPERF_REQUIRE_PROGRAM("python3");
  analysis::Profile p = test::flame_test_profile();
  p.functions[1].name = std::string("w\xff\x01k\xed\xa0\x80|\xc3", 9);
  std::string error;
  const auto frames = parse_svg(flame_svg(p, FlameSvgOptions{}), &error);
  ASSERT_TRUE(error.empty()) << error;
  // Each bad byte became '?'; the frame keeps its place and width (600 of 1000).
  ASSERT_TRUE(frames.count("w??k???|?")) << frames.size();
  EXPECT_NEAR(frames.at("w??k???|?").width, frames.at("all").width * 0.6, 0.01);
}

TEST(FlameSvg, EmptyProfileIsAValidImage) {
  TPERF_REQUIRE_PROGRAM("python3");
  std::string error;
  const auto frames = parse_svg(flame_svg(analysis::Profile{}, FlameSvgOptions{}), &error);
  EXPECT_TRUE(error.empty()) << error;
  EXPECT_TRUE(frames.empty());
}

}  // namespace
}  // namespace tperf::output
