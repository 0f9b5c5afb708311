#include "util/build_id.h"

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include <fmt/format.h>

namespace tperf::util {

std::string BuildId::hex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(size_t{size} * 2);
  for (size_t i = 0; i < size && i < bytes.size(); ++i) {
    out.push_back(kDigits[bytes[i] >> 4]);
    out.push_back(kDigits[bytes[i] & 15]);
  }
  return out;
}

BuildId BuildId::from_bytes(std::span<const uint8_t> raw) {
  BuildId b;
  size_t n = std::min(raw.size(), b.bytes.size());
  std::memcpy(b.bytes.data(), raw.data(), n);
  b.size = static_cast<uint8_t>(n);
  return b;
}

std::optional<BuildId> BuildId::from_hex(std::string_view hex) {
  if (hex.empty() || hex.size() % 2 || hex.size() > 40) return std::nullopt;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  BuildId b;
  for (size_t i = 0; i < hex.size(); i += 2) {
    int hi = nibble(hex[i]), lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    b.bytes[i / 2] = static_cast<uint8_t>(hi << 4 | lo);
  }
  b.size = static_cast<uint8_t>(hex.size() / 2);
  return b;
}

namespace {

// Scans one note data block for NT_GNU_BUILD_ID; libelf bounds-checks each note header.
std::optional<BuildId> scan_notes(Elf_Data* data) {
  if (!data) return std::nullopt;
  size_t offset = 0;
  GElf_Nhdr nhdr;
  size_t name_off = 0, desc_off = 0;
  while (offset < data->d_size) {
    size_t next = gelf_getnote(data, offset, &nhdr, &name_off, &desc_off);
    if (next == 0) break;
    const char* base = static_cast<const char*>(data->d_buf);
    if (nhdr.n_type == NT_GNU_BUILD_ID && nhdr.n_namesz == 4 && std::memcmp(base + name_off, "GNU", 4) == 0 &&
        nhdr.n_descsz > 0) {
      return BuildId::from_bytes({reinterpret_cast<const uint8_t*>(base + desc_off), nhdr.n_descsz});
    }
    offset = next;
  }
  return std::nullopt;
}

std::optional<BuildId> from_elf(Elf* elf, std::string* error) {
  if (elf_kind(elf) != ELF_K_ELF) {
    if (error) *error = "not an ELF file";
    return std::nullopt;
  }
  size_t phnum = 0;
  if (elf_getphdrnum(elf, &phnum) == 0) {
    for (size_t i = 0; i < phnum; ++i) {
      GElf_Phdr phdr;
      if (!gelf_getphdr(elf, static_cast<int>(i), &phdr) || phdr.p_type != PT_NOTE) continue;
      if (auto id = scan_notes(elf_getdata_rawchunk(elf, static_cast<int64_t>(phdr.p_offset), phdr.p_filesz,
                                                    phdr.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR))) {
        return id;
      }
    }
  }
  // Separate debug files keep the note section but their program headers describe no file data.
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_NOTE) continue;
    if (auto id = scan_notes(elf_getdata(scn, nullptr))) return id;
  }
  if (error) *error = "no build-id note";
  return std::nullopt;
}

}  // namespace

std::optional<BuildId> read_build_id(const std::string& path, std::string* error) {
  elf_version(EV_CURRENT);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (error) *error = std::strerror(errno);
    return std::nullopt;
  }
  std::optional<BuildId> id;
  if (Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr)) {
    id = from_elf(elf, error);
    elf_end(elf);
  } else if (error) {
    *error = elf_errmsg(-1);
  }
  ::close(fd);
  return id;
}

std::optional<BuildId> read_build_id_from_memory(std::span<const uint8_t> image, std::string* error) {
  elf_version(EV_CURRENT);
  // libelf does not write through this pointer with ELF_C_READ_MMAP-like memory images.
  Elf* elf = elf_memory(const_cast<char*>(reinterpret_cast<const char*>(image.data())), image.size());
  if (!elf) {
    if (error) *error = elf_errmsg(-1);
    return std::nullopt;
  }
  auto id = from_elf(elf, error);
  elf_end(elf);
  return id;
}

std::optional<BuildId> build_id_from_notes(std::span<const uint8_t> notes) {
  size_t pos = 0;
  auto u32 = [&](size_t at) {
    uint32_t v;
    std::memcpy(&v, notes.data() + at, 4);
    return v;
  };
  while (pos + 12 <= notes.size()) {
    const uint32_t namesz = u32(pos), descsz = u32(pos + 4), type = u32(pos + 8);
    // Sizes larger than what is left would wrap the padded offsets below.
    if (namesz > notes.size() || descsz > notes.size()) break;
    const size_t name_at = pos + 12;
    const size_t desc_at = name_at + ((size_t{namesz} + 3) & ~size_t{3});
    const size_t next = desc_at + ((size_t{descsz} + 3) & ~size_t{3});
    if (next > notes.size()) break;
    if (type == NT_GNU_BUILD_ID && namesz == 4 && std::memcmp(notes.data() + name_at, "GNU", 4) == 0 && descsz > 0) {
      return BuildId::from_bytes(notes.subspan(desc_at, descsz));
    }
    pos = next;
  }
  return std::nullopt;
}

std::optional<BuildId> running_kernel_build_id() {
  const int fd = ::open("/sys/kernel/notes", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::vector<uint8_t> buf(1 << 16);
  const ssize_t n = ::read(fd, buf.data(), buf.size());
  ::close(fd);
  if (n <= 0) return std::nullopt;
  buf.resize(static_cast<size_t>(n));
  return build_id_from_notes(buf);
}

}  // namespace tperf::util
