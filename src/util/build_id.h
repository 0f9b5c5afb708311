// Build ids (the GNU build-id note that names one exact build of an ELF file): the value type
// shared by the machine model, the recorder and the symbolizer, and reading it from an ELF file.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace tperf::util {

struct BuildId {
  uint8_t size = 0;  // 0: none
  std::array<uint8_t, 20> bytes{};

  bool empty() const { return size == 0; }
  bool operator==(const BuildId&) const = default;
  // Lower-case hex of the `size` bytes ("" when empty), as perf prints and names cache files.
  std::string hex() const;
  // The first 20 bytes of `raw` (perf stores at most 20).
  static BuildId from_bytes(std::span<const uint8_t> raw);
  // Parses hex digits (as in a .build-id path or `perf buildid-list`); nullopt when malformed.
  static std::optional<BuildId> from_hex(std::string_view hex);
};

// Reads the NT_GNU_BUILD_ID note of the ELF file at `path` (from its program headers' PT_NOTE or,
// for files without them such as separate debug files, its SHT_NOTE sections). Returns nullopt
// when the file has none; `error` (optional) then says why: not readable, not ELF, no note.
std::optional<BuildId> read_build_id(const std::string& path, std::string* error = nullptr);

// The same from an ELF image already in memory (a vDSO copy, a fuzzer input).
std::optional<BuildId> read_build_id_from_memory(std::span<const uint8_t> image, std::string* error = nullptr);

// The GNU build-id note in a bare run of ELF notes (the layout of /sys/kernel/notes): each
// header and its padded name and description are checked against the end of `notes`.
std::optional<BuildId> build_id_from_notes(std::span<const uint8_t> notes);

// The running kernel's build id, from /sys/kernel/notes; nullopt when it cannot be read.
std::optional<BuildId> running_kernel_build_id();

}  // namespace tperf::util
