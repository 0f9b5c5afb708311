// Pieces of JSON text for the exports that write it (speedscope, Firefox Profiler): strings
// escaped as RFC 8259 asks, names taken from binaries kept valid UTF-8.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tperf::output {

// Appends `s` as a JSON string (with the quotes). Bytes that are not valid UTF-8 (symbol names
// are bytes, not text) become U+FFFD, so that JSON.parse accepts the file. Control characters
// are written \u00XX, or with `short_escapes` as \b \f \n \r \t where JSON has those forms
// (perf's JSON writer uses them).
void append_json_string(std::string& out, std::string_view s, bool short_escapes = false);

// A number of milliseconds with microsecond digits ("12.345"), as the Firefox Profiler's times are.
void append_json_ms(std::string& out, uint64_t nanoseconds);

}  // namespace tperf::output
