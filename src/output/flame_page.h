// The interactive flame page of `tperf flame`: one self-contained HTML file (web/ embedded at build
// time) with the profile's stack table inlined as compact JSON, from which the page builds and
// draws its merged call tree.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "analysis/profile.h"
#include "output/flame_timeline.h"

namespace tperf::output {

// How a frame is drawn; the numbers are the page's ("kind" array of the JSON) and the SVG's.
enum class FrameKind : uint8_t { kUser = 0, kKernel = 1, kInlined = 2, kUnknown = 3 };
FrameKind frame_kind(const analysis::Profile& profile, uint32_t frame);

// `s` as a JSON string literal (with the quotes) that is also safe inside an HTML <script>
// element: '<', '>' and '&' are written as \u escapes, so no "</script>" or "<!--" can appear.
std::string json_string(std::string_view s);

// The stack table as the page reads it: column arrays (functions, frames, stacks, threads,
// events, counts), the report header lines and the unwinding summary. Indices that point
// nowhere (kNoIndex) are -1. With the profile's timed samples, also "timeline"
// (output/flame_timeline.h): start, width, buckets, the cells of each bucket (count index,
// samples, weight), hasStates, the off-CPU ns per (thread, bucket), each thread's first and last time.
std::string flame_profile_json(const analysis::Profile& profile, const FlameTimelineOptions& timeline = {});

struct FlamePageOptions {
  std::string title = "tperf flame";
  FlameTimelineOptions timeline;
};

// The whole page: web/flame.html with the CSS, the script and flame_profile_json filled in.
std::string flame_page_html(const analysis::Profile& profile, const FlamePageOptions& options);

}  // namespace tperf::output
