// Small text helpers. append_format: formatted text onto a std::string quickly (fmt's
// back_insert_iterator path pushes one character at a time into the string; it was a quarter of
// `tperf script`'s time), through fmt's stack buffer and one append. parse_hex_prefix: the
// addresses of kallsyms and JIT map lines.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace tperf::util {

// Hex digits at the start of `s` (at most 16; an optional 0x first): the number of characters
// consumed, 0 when there is no digit (then *out is left alone).
inline size_t parse_hex_prefix(std::string_view s, uint64_t* out) {
  size_t i = 0;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) i = 2;
  const size_t first = i;
  uint64_t v = 0;
  for (; i < s.size() && i - first < 16; ++i) {
    const char c = s[i];
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    } else {
      break;
    }
    v = v << 4 | static_cast<uint64_t>(d);
  }
  if (i == first) return 0;
  *out = v;
  return i;
}

template <typename... Args>
void append_format(std::string& out, fmt::format_string<Args...> format, Args&&... args) {
  fmt::memory_buffer buf;
  fmt::format_to(fmt::appender(buf), format, std::forward<Args>(args)...);
  out.append(buf.data(), buf.size());
}

}  // namespace tperf::util
