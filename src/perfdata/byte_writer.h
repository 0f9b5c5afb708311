// The mirror of ByteReader: appends fixed-width fields, bytes and padded strings to a byte
// vector in either byte order, so perf.data files of both endiannesses can be produced.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "perfdata/byte_reader.h"

namespace tperf::perfdata {

// Rounds n up to a multiple of `align` (a power of two).
constexpr uint64_t align_up(uint64_t n, uint64_t align) { return (n + align - 1) & ~(align - 1); }

class ByteWriter {
 public:
  // Appends to `out` (which must outlive the writer); swap = write in the foreign byte order.
  explicit ByteWriter(std::vector<uint8_t>& out, bool swap = false) : out_(&out), swap_(swap) {}

  bool swapped() const { return swap_; }
  size_t size() const { return out_->size(); }
  std::vector<uint8_t>& buffer() { return *out_; }

  ByteWriter& u8(uint8_t v) {
    out_->push_back(v);
    return *this;
  }
  ByteWriter& u16(uint16_t v) { return put(v); }
  ByteWriter& u32(uint32_t v) { return put(v); }
  ByteWriter& u64(uint64_t v) { return put(v); }
  ByteWriter& s32(int32_t v) { return put(static_cast<uint32_t>(v)); }
  ByteWriter& s64(int64_t v) { return put(static_cast<uint64_t>(v)); }

  ByteWriter& bytes(std::span<const uint8_t> b) {
    out_->insert(out_->end(), b.begin(), b.end());
    return *this;
  }
  ByteWriter& bytes(std::string_view s) {
    const auto* p = reinterpret_cast<const uint8_t*>(s.data());
    out_->insert(out_->end(), p, p + s.size());
    return *this;
  }
  ByteWriter& zeros(size_t n) {
    out_->resize(out_->size() + n, 0);
    return *this;
  }
  ByteWriter& u64s(std::span<const uint64_t> values) {
    for (uint64_t v : values) u64(v);
    return *this;
  }

  // The string, a NUL, then zeros up to a multiple of `align` bytes (counted from the string's
  // start): what the kernel does for comm/filename (align 8) and perf for header strings (64).
  ByteWriter& padded_string(std::string_view s, size_t align = 8) {
    size_t len = static_cast<size_t>(align_up(s.size() + 1, align));
    bytes(s);
    return zeros(len - s.size());
  }
  // The string in a field of exactly n bytes, NUL-padded; longer strings are cut to n - 1 bytes.
  ByteWriter& fixed_string(std::string_view s, size_t n) {
    if (n == 0) return *this;
    if (s.size() > n - 1) s = s.substr(0, n - 1);
    bytes(s);
    return zeros(n - s.size());
  }
  // Zeros until the buffer size is a multiple of `align` counted from position `from`.
  ByteWriter& pad_to(size_t align, size_t from = 0) {
    size_t len = out_->size() - from;
    return zeros(static_cast<size_t>(align_up(len, align)) - len);
  }

  // Overwrite a field written earlier (sizes known only at the end).
  void patch_u16(size_t pos, uint16_t v) { patch(pos, v); }
  void patch_u32(size_t pos, uint32_t v) { patch(pos, v); }
  void patch_u64(size_t pos, uint64_t v) { patch(pos, v); }

 private:
  template <typename T>
  ByteWriter& put(T v) {
    if (swap_) v = ByteReader::byteswap(v);
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    out_->insert(out_->end(), p, p + sizeof(T));
    return *this;
  }
  template <typename T>
  void patch(size_t pos, T v) {
    if (pos + sizeof(T) > out_->size()) throw std::out_of_range("ByteWriter::patch past the end");
    if (swap_) v = ByteReader::byteswap(v);
    std::memcpy(out_->data() + pos, &v, sizeof(T));
  }

  std::vector<uint8_t>* out_;
  bool swap_;
};

}  // namespace tperf::perfdata
