// The BUILD_ID feature of a recording: which DSOs the samples hit and their build ids. Like perf
// record, the written file is read back once at the end; a minimal map tracker (maps per process,
// exec resets, fork copies) stands in for the session layer, which record/ must not depend on:
// the recorder only needs "which file was mapped at this ip", not threads or symbols.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "perfdata/features.h"
#include "util/build_id.h"

namespace tperf::record {

// The build id of the vDSO mapped into this process (the same image every process gets).
std::optional<util::BuildId> vdso_build_id();

struct BuildIdStats {
  uint64_t samples = 0;
  uint64_t unresolved = 0;  // samples whose ip fell in no known map
  uint64_t dsos_hit = 0;
  uint64_t without_build_id = 0;  // hit DSOs whose build id could not be read
};

// Reads the recording at `path` (file, directory or any layout perfdata::Reader reads) and
// returns one entry per DSO hit by a sample ip and having a build id, in first-hit order, as perf
// writes them (pid -1; misc KERNEL for the kernel and modules, USER otherwise; the kernel as
// "[kernel.kallsyms]"). Throws what the reader throws.
std::vector<perfdata::BuildIdEntry> collect_build_ids(const std::string& path, BuildIdStats* stats = nullptr);

}  // namespace tperf::record
