#include "perfdata/tracing_data.h"

#include <fmt/format.h>

#include <charconv>
#include <cstring>
#include <string_view>

#include "perfdata/error.h"

namespace tperf::perfdata {

namespace {

// A bounds-checked cursor over the payload; every failure names the file offset.
class Cursor {
 public:
  Cursor(std::span<const uint8_t> d, uint64_t base) : d_(d), base_(base) {}
  uint64_t offset() const { return base_ + pos_; }
  void need(uint64_t n, const char* what) const {
    if (n > d_.size() - pos_) {
      throw FormatError(offset(), fmt::format("TRACING_DATA: {} ({} bytes) runs past the end of the data", what, n));
    }
  }
  std::span<const uint8_t> bytes(uint64_t n, const char* what) {
    need(n, what);
    auto s = d_.subspan(pos_, static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return s;
  }
  template <typename T>
  T num(const char* what) {
    auto b = bytes(sizeof(T), what);
    T v = 0;
    for (size_t i = 0; i < sizeof(T); ++i) {
      const size_t at = big_endian_ ? i : sizeof(T) - 1 - i;
      v = static_cast<T>((v << 8) | b[at]);
    }
    return v;
  }
  std::string_view cstring(const char* what) {
    const void* nul = pos_ < d_.size() ? std::memchr(d_.data() + pos_, 0, d_.size() - pos_) : nullptr;
    if (!nul) throw FormatError(offset(), fmt::format("TRACING_DATA: {} has no terminating NUL", what));
    const size_t len = static_cast<size_t>(static_cast<const uint8_t*>(nul) - (d_.data() + pos_));
    std::string_view s(reinterpret_cast<const char*>(d_.data() + pos_), len);
    pos_ += len + 1;
    return s;
  }
  void set_big_endian(bool b) { big_endian_ = b; }

 private:
  std::span<const uint8_t> d_;
  uint64_t base_;
  size_t pos_ = 0;
  bool big_endian_ = false;
};

// The value after "<key>: " on a line of a format file; "" when no line has it.
std::string_view field_of(std::string_view text, std::string_view key) {
  size_t at = 0;
  while (at < text.size()) {
    size_t eol = text.find('\n', at);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(at, eol - at);
    if (line.starts_with(key) && line.substr(key.size()).starts_with(": ")) {
      std::string_view v = line.substr(key.size() + 2);
      while (!v.empty() && (v.back() == ' ' || v.back() == '\r')) v.remove_suffix(1);
      return v;
    }
    at = eol + 1;
  }
  return {};
}

}  // namespace

TracingDataLayout tracing_data_layout(std::span<const uint8_t> data, uint64_t offset) {
  TracingDataLayout l;
  Cursor c(data, offset);
  static constexpr uint8_t kMagic[] = {0x17, 0x08, 0x44, 't', 'r', 'a', 'c', 'i', 'n', 'g'};
  auto magic = c.bytes(sizeof kMagic, "magic");
  if (std::memcmp(magic.data(), kMagic, sizeof kMagic) != 0) {
    throw FormatError(offset, "TRACING_DATA: no \\x17\\x08\\x44tracing magic");
  }
  l.version = c.cstring("version");
  l.big_endian = c.num<uint8_t>("endianness") != 0;
  c.set_big_endian(l.big_endian);
  l.long_size = c.num<uint8_t>("long size");
  l.page_size = c.num<uint32_t>("page size");
  auto text = [](std::span<const uint8_t> b) {
    return std::string_view(reinterpret_cast<const char*>(b.data()), b.size());
  };
  // header_page and header_event: a NUL-terminated title and a u64-sized text each.
  for (const char* title : {"header_page", "header_event"}) {
    const uint64_t at = c.offset();
    if (c.cstring("section title") != title) {
      throw FormatError(at, fmt::format("TRACING_DATA: expected the {} section", title));
    }
    auto body = c.bytes(c.num<uint64_t>(title), title);
    if (title[7] == 'p') l.header_page = text(body);
  }
  // ftrace's own formats: a u32 count of u64-sized texts.
  for (uint32_t n = c.num<uint32_t>("ftrace format count"); n > 0; --n) {
    const uint64_t size = c.num<uint64_t>("ftrace format size");
    const uint64_t at = c.offset();
    l.ftrace_formats.push_back({"ftrace", text(c.bytes(size, "ftrace format")), at});
  }
  for (uint32_t systems = c.num<uint32_t>("event system count"); systems > 0; --systems) {
    const std::string_view system = c.cstring("event system name");
    for (uint32_t n = c.num<uint32_t>("event format count"); n > 0; --n) {
      const uint64_t size = c.num<uint64_t>("event format size");
      const uint64_t at = c.offset();
      l.events.push_back({system, text(c.bytes(size, "event format")), at});
    }
  }
  // kallsyms (u32 size), printk formats (u32 size), saved cmdlines (u64 size, from 0.6): read
  // while they are whole; the event formats above are what matters.
  try {
    l.kallsyms = text(c.bytes(c.num<uint32_t>("kallsyms size"), "kallsyms"));
    l.printk_formats = text(c.bytes(c.num<uint32_t>("printk formats size"), "printk formats"));
    if (l.version >= "0.6") l.saved_cmdlines = text(c.bytes(c.num<uint64_t>("saved cmdlines size"), "saved cmdlines"));
  } catch (const FormatError&) {
  }
  return l;
}

std::vector<TracingEventFormat> tracing_data_event_formats(std::span<const uint8_t> data, uint64_t offset) {
  return tracing_data_layout(data, offset).events;
}

std::optional<std::string> tracing_data_event_format(std::span<const uint8_t> data, std::string_view system,
                                                     std::string_view name, uint64_t offset) {
  for (const TracingEventFormat& f : tracing_data_event_formats(data, offset)) {
    if (f.system == system && field_of(f.text, "name") == name) return std::string(f.text);
  }
  return std::nullopt;
}

std::map<uint64_t, std::string> tracepoint_names(std::span<const uint8_t> data, uint64_t offset) {
  std::map<uint64_t, std::string> names;
  for (const TracingEventFormat& f : tracing_data_event_formats(data, offset)) {
    std::string_view name = field_of(f.text, "name"), id = field_of(f.text, "ID");
    uint64_t value = 0;
    auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), value);
    if (name.empty() || id.empty() || ec != std::errc() || end != id.data() + id.size()) {
      throw FormatError(f.offset, fmt::format("TRACING_DATA: an event format of {} has no name and ID", f.system));
    }
    names.emplace(value, fmt::format("{}:{}", f.system, name));
  }
  return names;
}

}  // namespace tperf::perfdata
