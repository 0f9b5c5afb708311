// Where the symbols of a user-space DSO can come from, in perf 6.1's order (dso__load's
// binary_type_symtab): the .gnu_debuglink target, the build-id cache (~/.debug/.build-id/xx/rest/
// {elf,debug}), /usr/lib/debug/<path>.debug, /usr/lib/debug/<path>,
// /usr/lib/debug/.build-id/xx/rest.debug, then the file itself; all under --symfs when given.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "util/build_id.h"

namespace tperf::symbols {

struct DebugLookupOptions {
  std::string symfs;         // prefix for every path of the recording's machine ("" = none)
  std::string buildid_dir;   // perf's build-id cache; "" = $HOME/.debug
};

struct SymbolFileCandidate {
  std::string path;
  const char* kind;  // "debuglink", "build-id cache", ... for messages
  bool debuglink = false;     // the CRC in `crc` must match when the build id cannot decide
  uint32_t crc = 0;
};

// The files to try for `dso_name`, best first. Only files that exist are listed. `is_vdso`: the
// build-id cache holds the vDSO image as "vdso".
std::vector<SymbolFileCandidate> symbol_file_candidates(std::string_view dso_name, const util::BuildId& build_id,
                                                        bool is_vdso, const DebugLookupOptions& options);

// "<symfs><path>" (perf's symbol__join_symfs).
std::string join_symfs(const std::string& symfs, std::string_view path);

// "/proc/PID/root" while process `pid` lives in a mount namespace other than ours (a container),
// else "": the root under which perf opens the files that process mapped.
std::string mount_namespace_root(int32_t pid);
// The build-id cache directory in use ($HOME/.debug unless set).
std::string buildid_cache_dir(const DebugLookupOptions& options);

}  // namespace tperf::symbols
