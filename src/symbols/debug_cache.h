// Uncompressed copies of debug files, kept between runs.
//
// Distributions ship debug files with their DWARF sections compressed (SHF_COMPRESSED, zlib), and
// libdw inflates every such section of a file the first time it is asked anything about it: the
// debug file of libc6-dbg's libc.so.6 is 4 MB on disk and 10 MB inflated, which takes this
// machine 70-90 ms and 11 MB of heap, in every run that wants one source line or one inlined
// frame of libc. The copy, made once with the same sections uncompressed and kept under its build
// id, is mapped instead: no inflating, and only the pages read are resident.
//
// Only libdw reads the copy (source lines, inline chains); symbols still come from the original.
// Nothing is ever taken from a copy that is not the same file: a copy is used only when its build
// id is the original's and none of its sections is compressed, it is written under a temporary
// name and renamed into place (concurrent runs race harmlessly), and when anything fails the
// original is read as before.
#pragma once

#include <string>

namespace tperf::symbols {

// The cache directory: $TPERF_CACHE_DIR when set ("" turns the cache off), else
// $XDG_CACHE_HOME/tperf, else $HOME/.cache/tperf; "" when there is none of these.
std::string default_cache_dir();

struct UncompressedCopy {
  std::string path;   // the copy to read instead; "" = read the file itself
  bool made = false;  // this call wrote the copy
  std::string error;  // why a copy that was wanted could not be had ("" when none was wanted)
};

// For the ELF file at `path`: when it has compressed sections and a build id, the path of its
// uncompressed copy in `cache_dir`/debug (made now if it is not there yet). Files with a
// .gnu_debugaltlink (dwz: their supplementary file is found relative to the file itself) or
// with GNU-style .zdebug sections get no copy, nor does anything when `cache_dir` is "".
UncompressedCopy uncompressed_copy(const std::string& path, const std::string& cache_dir);

}  // namespace tperf::symbols
