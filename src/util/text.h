// Appending formatted text to a std::string quickly: fmt's back_insert_iterator path pushes one
// character at a time into the string (it was a quarter of `tperf script`'s time), so format into
// fmt's stack buffer and append that once.
#pragma once

#include <fmt/format.h>

#include <string>
#include <utility>

namespace tperf::util {

template <typename... Args>
void append_format(std::string& out, fmt::format_string<Args...> format, Args&&... args) {
  fmt::memory_buffer buf;
  fmt::format_to(fmt::appender(buf), format, std::forward<Args>(args)...);
  out.append(buf.data(), buf.size());
}

}  // namespace tperf::util
