// `tperf flame --svg`: a static flame graph of a profile as one SVG file (callers below, callees
// above, widths proportional to weight, a <title> per frame for hover, colours by frame kind).
#pragma once

#include <cstdint>
#include <string>

#include "analysis/profile.h"

namespace tperf::output {

struct FlameSvgOptions {
  std::string title = "Flame Graph";
  // The event drawn (an SVG shows one measure): kNoIndex picks the one with the most samples.
  uint32_t event = analysis::kNoIndex;
  bool by_samples = false;  // widths by sample count instead of period
  double width = 1200;      // of the image, in px
};

std::string flame_svg(const analysis::Profile& profile, const FlameSvgOptions& options);

}  // namespace tperf::output
