// Firefox Profiler files from the stack table, in the Gecko profile format: the JSON Firefox's own
// profiler emits and perf's `script report gecko` writes (meta.version 24, tables given as a
// schema plus rows), which profiler.firefox.com processes and upgrades on load.
#pragma once

#include <string>

#include "analysis/profile.h"

namespace tperf::output {

// One thread per (tid, event) (named by its comm, with the event when the file has several),
// each with its string, frame, stack and sample tables: a sample per recorded sample with its time
// in milliseconds from the first one (the Gecko format has no weight column: every sample counts
// one), frames named "function (in dso)" with category User or Kernel, libs with their build
// ids as codeId and breakpadId.
std::string encode_firefox(const analysis::Profile& profile);

// The Breakpad id of an ELF build id, as the Firefox Profiler and samply name libraries: its
// first 16 bytes (zero-padded) read as a little-endian GUID, uppercase hex, then the age "0".
// "" for an empty build id.
std::string breakpad_id(const std::string& build_id_hex);

}  // namespace tperf::output
