// Symbol name demangling as perf 6.1 (Debian build, libiberty) shows names: C++ Itanium and Rust
// (legacy and v0) through libiberty's cplus_demangle without DMGL_PARAMS (perf passes parameters
// only under -v), then perf's OCaml rule for "caml" names.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tperf::symbols {

// The demangled form of `mangled`, or nullopt when it is not a mangled name perf would change.
// Thread-safe (libiberty's demangler keeps no global state for this call).
std::optional<std::string> demangle(std::string_view mangled);

// perf's OCaml demangling: "camlModule__fn_123" -> "Module.fn". nullopt when not an OCaml name.
std::optional<std::string> demangle_ocaml(std::string_view mangled);

}  // namespace tperf::symbols
