// speedscope's own file format (https://www.speedscope.app/file-format-schema.json) from the
// stack table: shared frames, one "sampled" profile per thread and event.
#pragma once

#include <string>

#include "analysis/profile.h"

namespace tperf::output {

// `name`: the file's title in speedscope (the recording's path). Each thread's samples are in time
// order when the profile kept them (speedscope's "Time Order" view is then the timeline), else
// one sample per distinct stack; weights are the periods, in nanoseconds for the clock events,
// "none" (plain counts) for the others. Frames are one per function (and source line, when the
// profile has them); a frame without a symbol names its DSO in "file".
std::string encode_speedscope(const analysis::Profile& profile, const std::string& name);

}  // namespace tperf::output
