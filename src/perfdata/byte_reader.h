// A bounds-checked cursor over untrusted bytes that swaps foreign byte order as it decodes.
// Every read past the end throws FormatError naming the absolute file offset.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "perfdata/error.h"

namespace tperf::perfdata {

class ByteReader {
 public:
  ByteReader() = default;
  // base_offset: the file offset of data[0], used in error messages.
  ByteReader(std::span<const uint8_t> data, bool swap, uint64_t base_offset)
      : data_(data), swap_(swap), base_(base_offset) {}

  uint64_t offset() const { return base_ + pos_; }
  size_t pos() const { return pos_; }
  size_t size() const { return data_.size(); }
  size_t remaining() const { return data_.size() - pos_; }
  bool swapped() const { return swap_; }
  bool has(size_t n) const { return n <= remaining(); }
  std::span<const uint8_t> data() const { return data_; }
  const uint8_t* cursor() const { return data_.data() + pos_; }

  void need(size_t n, const char* what) const {
    if (!has(n)) fail(what, n);
  }

  uint8_t u8(const char* what = "u8") {
    need(1, what);
    return data_[pos_++];
  }
  uint16_t u16(const char* what = "u16") { return get<uint16_t>(what); }
  uint32_t u32(const char* what = "u32") { return get<uint32_t>(what); }
  uint64_t u64(const char* what = "u64") { return get<uint64_t>(what); }
  int32_t s32(const char* what = "s32") { return static_cast<int32_t>(u32(what)); }
  int64_t s64(const char* what = "s64") { return static_cast<int64_t>(u64(what)); }

  std::span<const uint8_t> bytes(size_t n, const char* what = "bytes") {
    need(n, what);
    auto s = data_.subspan(pos_, n);
    pos_ += n;
    return s;
  }
  void skip(size_t n, const char* what = "bytes") {
    need(n, what);
    pos_ += n;
  }
  void seek(size_t pos) {
    if (pos > data_.size()) fail("seek", pos - pos_);
    pos_ = pos;
  }
  // A NUL-terminated string stored in a field of n bytes; the string ends at the first NUL
  // or at the end of the field.
  std::string_view fixed_string(size_t n, const char* what = "string") {
    auto b = bytes(n, what);
    const char* p = reinterpret_cast<const char*>(b.data());
    const void* nul = std::memchr(p, 0, n);
    return std::string_view(p, nul ? static_cast<const char*>(nul) - p : n);
  }
  // A NUL-terminated string that extends at most to the end of the data; the cursor moves
  // past the NUL (or to the end when there is none).
  std::string_view cstring() {
    const char* p = reinterpret_cast<const char*>(cursor());
    size_t n = remaining();
    const void* nul = std::memchr(p, 0, n);
    size_t len = nul ? static_cast<const char*>(nul) - p : n;
    pos_ += nul ? len + 1 : len;
    return std::string_view(p, len);
  }

  ByteReader sub(size_t n, const char* what = "bytes") {
    uint64_t off = offset();
    auto b = bytes(n, what);
    return ByteReader(b, swap_, off);
  }

  [[noreturn]] void fail(const char* what, size_t needed) const;

 private:
  template <typename T>
  T get(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    if (swap_) v = byteswap(v);
    return v;
  }

 public:
  template <typename T>
  static T byteswap(T v) {
    if constexpr (sizeof(T) == 1) return v;
    if constexpr (sizeof(T) == 2) return static_cast<T>(__builtin_bswap16(static_cast<uint16_t>(v)));
    if constexpr (sizeof(T) == 4) return static_cast<T>(__builtin_bswap32(static_cast<uint32_t>(v)));
    if constexpr (sizeof(T) == 8) return static_cast<T>(__builtin_bswap64(static_cast<uint64_t>(v)));
  }

 private:
  std::span<const uint8_t> data_;
  size_t pos_ = 0;
  bool swap_ = false;
  uint64_t base_ = 0;
};

// Loads a value of type T from possibly unaligned memory, swapping when asked.
template <typename T>
inline T load(const uint8_t* p, bool swap) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return swap ? ByteReader::byteswap(v) : v;
}

}  // namespace tperf::perfdata
