// Small text helpers. append_format: formatted text onto a std::string quickly (fmt's
// back_insert_iterator path pushes one character at a time into the string; it was a quarter of
// `tperf script`'s time), through fmt's stack buffer and one append. parse_hex_prefix: the
// addresses of kallsyms and JIT map lines. split_commas and parse_number_list: every comma list
// of the command lines (sort keys, fields, comms, pids, tids, CPU lists) and of sysfs CPU files.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tperf::util {

// `v` in lowercase hex digits, without leading zeros or a prefix (printf's %lx), without fmt's
// format-string machinery (a callchain frame's address per line of script and JSON output).
inline void append_hex(std::string& out, uint64_t v) {
  char buf[16];
  char* const end = buf + sizeof buf;
  char* p = end;
  do {
    *--p = "0123456789abcdef"[v & 15];
    v >>= 4;
  } while (v);
  out.append(p, static_cast<size_t>(end - p));
}

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

// `text` padded with spaces to `width`, right-aligned or left-aligned, as fmt's "{:>W}" and
// "{:<W}" pad it: by display width, which for ASCII text is the byte count (the fast path, no
// format string parsed); other text goes through fmt.
inline void append_padded(std::string& out, std::string_view text, size_t width, bool right_aligned) {
  for (char c : text) {
    if (static_cast<unsigned char>(c) >= 0x80) {
      if (right_aligned) {
        append_format(out, "{:>{}}", text, width);
      } else {
        append_format(out, "{:<{}}", text, width);
      }
      return;
    }
  }
  const size_t pad = text.size() < width ? width - text.size() : 0;
  if (right_aligned) out.append(pad, ' ');
  out += text;
  if (!right_aligned) out.append(pad, ' ');
}

// "a,b,,c" -> {"a", "b", "c"}: the items of a comma list, empty ones left out.
inline std::vector<std::string> split_commas(std::string_view s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    const size_t comma = s.find(',', pos);
    const std::string_view item = s.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    if (!item.empty()) out.emplace_back(item);
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return out;
}

// A comma list of non-negative decimal numbers, with `ranges` also "A-B" items ("0-3,8"; a CPU
// list as sysfs and perf write them), appended to *out in the order given. Trailing white space
// (a sysfs file's newline) is ignored. False for anything else, a number above 2^24 or a range
// that runs backwards; *out may then hold part of the list.
inline bool parse_number_list(std::string_view s, bool ranges, std::vector<int32_t>* out) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  constexpr int64_t kMax = int64_t{1} << 24;
  for (const std::string& item : split_commas(s)) {
    size_t pos = 0;
    auto number = [&](int64_t* v) {
      const size_t start = pos;
      *v = 0;
      while (pos < item.size() && item[pos] >= '0' && item[pos] <= '9') {
        *v = *v * 10 + (item[pos] - '0');
        if (*v > kMax) return false;
        ++pos;
      }
      return pos > start;
    };
    int64_t a = 0, b = 0;
    if (!number(&a)) return false;
    b = a;
    if (ranges && pos < item.size() && item[pos] == '-') {
      ++pos;
      if (!number(&b) || b < a) return false;
    }
    if (pos != item.size()) return false;
    for (int64_t v = a; v <= b; ++v) out->push_back(static_cast<int32_t>(v));
  }
  return true;
}

}  // namespace tperf::util
