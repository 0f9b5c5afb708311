// The protocol buffers wire format, only as much as writing pprof files needs: varints,
// length-delimited fields (strings, nested messages) and packed repeated integers. A message is
// built into a byte string; a nested one is built apart and appended with its length.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tperf::output {

class ProtobufWriter {
 public:
  // Wire types of the field keys.
  static constexpr uint32_t kVarint = 0;
  static constexpr uint32_t kLengthDelimited = 2;

  void varint(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  void key(uint32_t field, uint32_t wire_type) { varint((static_cast<uint64_t>(field) << 3) | wire_type); }

  // An int64/uint64/bool field; proto3 leaves zero values out, and so do we.
  void uint_field(uint32_t field, uint64_t v) {
    if (v == 0) return;
    key(field, kVarint);
    varint(v);
  }
  // int64 fields carry negative values as ten-byte two's complement varints.
  void int_field(uint32_t field, int64_t v) { uint_field(field, static_cast<uint64_t>(v)); }

  // Strings and nested messages. A string is written even when empty where it must keep its place
  // (pprof's string table starts with "").
  void bytes_field(uint32_t field, std::string_view bytes) {
    key(field, kLengthDelimited);
    varint(bytes.size());
    out_.append(bytes);
  }
  void message_field(uint32_t field, const ProtobufWriter& message) { bytes_field(field, message.out_); }

  // A packed repeated integer field (one key, the length, then the varints).
  template <typename T>
  void packed_field(uint32_t field, const std::vector<T>& values) {
    if (values.empty()) return;
    ProtobufWriter body;
    for (T v : values) body.varint(static_cast<uint64_t>(v));
    message_field(field, body);
  }

  const std::string& bytes() const { return out_; }
  std::string& bytes() { return out_; }
  void clear() { out_.clear(); }

 private:
  std::string out_;
};

}  // namespace tperf::output
